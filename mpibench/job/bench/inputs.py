"""Benchmark inputs whose exact sum every rank knows without communicating.

``x[r, i] = (A[i] + r * B[i]) / 4`` with small integer tables ``A``, ``B``
drawn from the seeded generator, so the expected sum over ``p`` ranks is
``(p * A + B * p(p-1)/2) / 4``. Quarters of small integers keep every value
and every partial sum exact in float32 and float64, so an element off by more
than the summation bound ``p * eps * sum_r |x[r, i]|`` is wrong, not rounded.
"""
from __future__ import annotations

import numpy as np

from mpibench.base import seeds
from mpibench.base.buffer_layout import mapped_layout_copy

_TABLE = 4099  # a prime, so A and B do not line up with power-of-two sizes
DTYPES = {"float32": np.float32, "float64": np.float64}


def _tables(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = seeds.generator(seed, seeds.BENCH)
    return rng.integers(-8, 9, _TABLE), rng.integers(-3, 4, _TABLE)


class Expected:
    """One size's inputs for this rank, the exact sum over ``ranks`` ranks, and the tolerance."""

    def __init__(self, seed: int, rank: int, ranks: int, length: int, dtype=np.float32):
        dtype = np.dtype(dtype).type
        a, b = (np.resize(t.astype(dtype), length) for t in _tables(seed))
        pairs = dtype(ranks * (ranks - 1) // 2)
        quarter = dtype(0.25)
        self.inputs = mapped_layout_copy((a + dtype(rank) * b) * quarter)  # see base.buffer_layout
        self.sum = (dtype(ranks) * a + pairs * b) * quarter
        abs_sum = (dtype(ranks) * np.abs(a) + pairs * np.abs(b)) * quarter
        self.tolerance = dtype(ranks * float(np.finfo(dtype).eps)) * abs_sum

        self._diff = np.empty_like(self.sum)  # the check's scratch, allocated once (see wrong)
        self._off = np.empty(len(self.sum), dtype=bool)

    def wrong(self, result: np.ndarray) -> int:
        """How many elements of ``result`` are off by more than the tolerance.

        In place into scratch allocated once: temporaries of the buffer's size, freed
        between timed calls, made glibc hand memory back to the system, so MPI's own
        temporary buffer page-faulted inside the next timed call (docs/benchmarks.md)."""
        np.subtract(result, self.sum, out=self._diff)
        np.abs(self._diff, out=self._diff)
        np.greater(self._diff, self.tolerance, out=self._off)
        return int(np.count_nonzero(self._off))
