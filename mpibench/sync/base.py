"""The one interface every synchronisation strategy implements.

A strategy receives the step's local gradient sum and sample count, combines
them over the current membership and applies the averaged update to the
parameters in place, identically on every member. It reports which workers
contributed and the ``(offset, length)`` pieces that made up every reduced or
served buffer, for the ``membership`` and ``coverage`` invariants. The worker
loop sees nothing else of it.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Reduction:
    """What one reduction did: who is in the sum, and the pieces it was built from."""

    contributing: tuple[int, ...]  # worker ids
    pieces: list[tuple[int, int]] = field(default_factory=list)  # (global offset, length)
    total_length: int = 0
    algorithm: str = ""  # which algorithm reduced it, where a strategy chooses (auto, hier)


class SyncStrategy(ABC):
    """Reduce ``[grad_sum..., count]`` over the membership; apply the mean update."""

    name: str = ""

    def __init__(self, comm, backend, n_params: int, options: dict | None = None):
        self.comm = comm
        self.backend = backend
        self.n_params = n_params
        self.options = options or {}
        # The step buffer: gradient sums with the sample count carried in the last slot,
        # so one reduction moves both and the division happens once, afterwards.
        self.buffer = backend.zeros(n_params + 1, dtype=np.float32)

    @abstractmethod
    def reduce(self, buf) -> Reduction:
        """Sum ``buf`` element-wise over the membership, in place."""

    def synchronize(self, params, grad_sum, count: int, lr: float) -> Reduction:
        """One step's sync: pack, reduce, divide by the total count, apply."""
        self.backend.pack(self.buffer, grad_sum, count)
        reduction = self.reduce(self.buffer)
        total = self.buffer[-1]
        self.backend.apply_update(params, self.buffer[:-1], total, lr)
        return reduction

    def total_count(self) -> int | float:
        """The global sample count of the last synchronisation.

        An int while the count slot holds a whole finite number; otherwise the float it
        holds (NaN, inf, a fraction), so a poisoned buffer is recorded and judged by the
        checker instead of crashing every rank here."""
        value = float(self.backend.to_host(self.buffer[-1:])[0])
        return int(value) if np.isfinite(value) and value == int(value) else value

    def pool_loss(self, local_row: np.ndarray, contributing) -> np.ndarray:
        """Rows ``(count, sum, sumsq)`` of the contributing workers' losses.

        Gathered over the membership; rows of workers outside ``contributing``
        are dropped, so an excluded worker's losses never enter the statistics.
        """
        rows = np.empty((self.comm.size, 3), dtype=np.float64)
        self.comm.allgather(local_row, rows)
        keep = [i for i, w in enumerate(self.comm.worker_ids) if w in set(contributing)]
        return rows[keep]

    def close(self) -> None:
        """Release anything tied to the communicator."""
