"""base.buffer_layout: arrays at one offset in their page, for every dtype and size the benchmark uses."""
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.base.buffer_layout import MAPPED_OFFSET_BYTES, PAGE_BYTES, mapped_layout_copy, mapped_layout_empty


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
@pytest.mark.parametrize("length", [0, 1, 3, 1024, 16385])
def test_mapped_layout_empty_has_the_length_dtype_and_the_offset(length, dtype):
    a = mapped_layout_empty(length, dtype)
    assert a.shape == (length,) and a.dtype == np.dtype(dtype) and a.flags.c_contiguous and a.flags.writeable
    if length:
        assert a.ctypes.data % PAGE_BYTES == MAPPED_OFFSET_BYTES


def test_the_offset_is_where_a_large_allocation_starts():
    """The layout the benchmark's buffers copy: in a fresh process, NumPy's large arrays (glibc
    maps them), and with them the MPI's own temporary buffers of those sizes, start this far
    into a page. (Later, glibc's mmap threshold rises as mapped chunks are freed, and a large
    array may come from the heap: this test's own process may already be there.)"""
    code = "import numpy as np; print(sorted({np.empty(n, np.uint8).ctypes.data % 4096 for n in (1 << 20, 1 << 24)}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == f"[{MAPPED_OFFSET_BYTES}]", done.stdout + done.stderr


def test_two_buffers_allocated_in_a_row_sit_at_the_same_page_offset():
    """What plain allocation does not give: consecutive heap arrays 16 bytes apart modulo a page."""
    send, receive = mapped_layout_empty(16384, np.float32), mapped_layout_empty(16384, np.float32)
    assert (receive.ctypes.data - send.ctypes.data) % PAGE_BYTES == 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=32), max_size=3000))
def test_mapped_layout_copy_keeps_every_value(values):
    x = np.asarray(values, dtype=np.float32)
    y = mapped_layout_copy(x)
    assert y.dtype == x.dtype and np.array_equal(x, y)
    if x.size:
        assert y.ctypes.data % PAGE_BYTES == MAPPED_OFFSET_BYTES
    y[...] = 0  # a copy: the source is not touched
    assert np.array_equal(x, np.asarray(values, dtype=np.float32))
