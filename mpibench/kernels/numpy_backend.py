"""Host back-end: in-place NumPy operations on preallocated buffers.

Buffers are host memory, each at one offset in its page, so MPI gets them as they are (the ``host``
transfer path). Each operation is one or a few in-place ufunc passes; the rounding of
each step is what the CuPy kernels reproduce bit for bit.
"""
from __future__ import annotations

import numpy as np

from mpibench.base.aggregate import mean_from_totals
from mpibench.base.buffer_layout import mapped_layout_empty

from .transfer import process_transfer


class NumpyBackend:
    name = "numpy"
    xp = np

    def __init__(self):
        self.transfer = process_transfer()
        self.info = {"requested": "cpu", "backend": self.name, "transfer": "host", "fallback": None}

    # Every buffer at one offset in its page, the one a large malloc gives (base.buffer_layout):
    # a step buffer and the buffer it is reduced from never 16 bytes apart, as the heap may leave them.
    def empty(self, length: int, dtype=np.float32) -> np.ndarray:
        return mapped_layout_empty(length, dtype)

    def zeros(self, length: int, dtype=np.float32) -> np.ndarray:
        buf = mapped_layout_empty(length, dtype)
        buf[...] = 0
        return buf

    def to_host(self, array) -> np.ndarray:
        return np.asarray(array)

    def from_host(self, array: np.ndarray) -> np.ndarray:
        return array

    def load(self, dst: np.ndarray, src: np.ndarray) -> None:
        np.copyto(dst, src)

    def download(self, src: np.ndarray, dst: np.ndarray) -> None:
        np.copyto(dst, src)

    def counters(self) -> None:
        return None  # host memory: nothing crosses

    def accumulate(self, dst: np.ndarray, src: np.ndarray) -> None:
        np.add(dst, src, out=dst)

    def pack(self, buf: np.ndarray, grad_sum: np.ndarray, count: int) -> None:
        buf[:-1] = grad_sum
        buf[-1] = count

    def apply_update(self, params: np.ndarray, grad_sum: np.ndarray, count, lr: float) -> None:
        # Divide once by the global count (in place), then scale by lr and subtract.
        if mean_from_totals(grad_sum, count) is None:
            return  # nothing contributed: no update
        np.multiply(grad_sum, params.dtype.type(lr), out=grad_sum)
        np.subtract(params, grad_sum, out=params)

    def synchronize(self) -> None:
        pass

    def describe(self) -> dict:
        return {}
