"""Arrays laid out in their page as glibc lays out a large allocation, whatever the heap held.

Where a buffer starts within its 4 KiB page decides a reduction's speed: when a
loop reads one buffer and writes another whose start is a few bytes further on
modulo 4096, each load shares its low 12 address bits with a store a few elements
back and the CPU holds it until that store is done ("4K aliasing"). glibc's
``malloc`` maps every large allocation (above its mmap threshold) and starts it 16
bytes into a page, after the chunk's header: large NumPy arrays start there, and
so do the temporary buffers the MPI library allocates inside ``MPI_Allreduce``.
Small arrays come from the heap instead, at an offset that depends on everything
allocated before them, so two taken one after the other sit 16 bytes apart; and once a
mapped chunk is freed glibc raises its threshold (up to 32 MiB), so a later large array,
or the MPI's temporary buffer, may come from the heap too.

Measured here, p = 2, median call:

* 64 KiB: send and receive buffers 16 bytes apart, 57 µs (a plain mpi4py loop;
  a C loop of two ``malloc`` buffers 37-55 µs); at the same offset, 20-34 µs
  (18-30 µs in C).
* 16 and 64 MiB: both buffers page-aligned, 15.9 and 125 ms; both 16 bytes into a
  page, where the MPI's own temporary buffer starts, 10.0 and 57 ms (one launch,
  interleaved).

So every buffer the benchmark times starts :data:`MAPPED_OFFSET_BYTES` into a page:
one layout in every launch, the one a large ``malloc`` gives.
"""
from __future__ import annotations

import numpy as np

PAGE_BYTES = 4096
MAPPED_OFFSET_BYTES = 16  # glibc's chunk header before a mapped allocation's first byte


def mapped_layout_empty(length: int, dtype) -> np.ndarray:
    """An uninitialised 1-D array of ``length`` elements whose first byte lies
    :data:`MAPPED_OFFSET_BYTES` past a page boundary (an empty array has no first byte, and
    NumPy gives its view no particular address)."""
    dtype = np.dtype(dtype)
    arena = np.empty(length * dtype.itemsize + 2 * PAGE_BYTES, dtype=np.uint8)
    start = -arena.ctypes.data % PAGE_BYTES + MAPPED_OFFSET_BYTES
    return arena[start:start + length * dtype.itemsize].view(dtype)


def mapped_layout_copy(values: np.ndarray) -> np.ndarray:
    """``values`` (flattened) copied into an array from :func:`mapped_layout_empty`."""
    out = mapped_layout_empty(values.size, values.dtype)
    out[...] = values.ravel()
    return out
