"""Arrays that start on a 4 KiB page boundary, whatever the heap looked like before.

A benchmark's send and receive buffers taken from ``malloc`` one after the other
sit 16 bytes apart modulo 4096 (the heap chunk's header). In a reduction loop that
reads one and writes the other, each load then shares its low 12 address bits with
a store a few elements back, and the CPU stalls on that false dependency ("4K
aliasing"). Measured here: a C loop of 64 KiB ``MPI_Allreduce`` at p = 2, two
``malloc`` buffers, 37-55 us; the same two buffers page-aligned, 18-30 us (three
launches each). Where the heap puts NumPy's small arrays depends on what was
allocated before (a launch's probe-sized timing arrays, what the model imported),
so the same candidate landed in the slow or the fast layout launch by launch.
Every benchmark buffer starts on a page boundary instead: one layout in every
launch, the one a page-aligned allocation (``mmap``, ``posix_memalign``) gives.
"""
from __future__ import annotations

import numpy as np

PAGE_BYTES = 4096


def page_aligned_empty(length: int, dtype) -> np.ndarray:
    """An uninitialised 1-D array of ``length`` elements whose first byte starts a page (an empty
    array has no first byte, and NumPy gives its view no particular address)."""
    dtype = np.dtype(dtype)
    arena = np.empty(length * dtype.itemsize + PAGE_BYTES, dtype=np.uint8)
    start = -arena.ctypes.data % PAGE_BYTES
    return arena[start:start + length * dtype.itemsize].view(dtype)


def page_aligned_copy(values: np.ndarray) -> np.ndarray:
    """``values`` (flattened) copied into a page-aligned array of the same dtype."""
    out = page_aligned_empty(values.size, values.dtype)
    out[...] = values.ravel()
    return out
