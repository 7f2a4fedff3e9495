"""base.aligned: page-aligned arrays of every dtype and size the benchmark uses."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.base.aligned import PAGE_BYTES, page_aligned_copy, page_aligned_empty


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
@pytest.mark.parametrize("length", [0, 1, 3, 1024, 16385])
def test_page_aligned_empty_has_the_length_dtype_and_page_start(length, dtype):
    a = page_aligned_empty(length, dtype)
    assert a.shape == (length,) and a.dtype == np.dtype(dtype) and a.flags.c_contiguous and a.flags.writeable
    if length:
        assert a.ctypes.data % PAGE_BYTES == 0


def test_two_buffers_allocated_in_a_row_sit_at_the_same_page_offset():
    """What plain allocation does not give: consecutive heap arrays 16 bytes apart modulo a page."""
    send, receive = page_aligned_empty(16384, np.float32), page_aligned_empty(16384, np.float32)
    assert (receive.ctypes.data - send.ctypes.data) % PAGE_BYTES == 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=32), max_size=3000))
def test_page_aligned_copy_keeps_every_value(values):
    x = np.asarray(values, dtype=np.float32)
    y = page_aligned_copy(x)
    assert y.dtype == x.dtype and np.array_equal(x, y)
    if x.size:
        assert y.ctypes.data % PAGE_BYTES == 0
    y[...] = 0  # a copy: the source is not touched
    assert np.array_equal(x, np.asarray(values, dtype=np.float32))
