"""Bench rows for the sharded strategies' two collectives: reduce-scatter and all-gather.

Beside a sharded strategy's own row (its ``reduce``: the two collectives, an
all-reduce), ``NAME:reduce-scatter`` and ``NAME:all-gather`` time each one
alone on the same buffer, with the harness of every other row (refill, barrier,
timed call, the last call's result checked after the batch):

* reduce-scatter: from this rank's inputs; afterwards the segment this rank
  owns must hold the exact sum (the rest of the buffer holds partial sums);
* all-gather: from a buffer that holds the exact sum in this rank's own
  segment and NaN everywhere else; afterwards every element must be the sum.

Bandwidth as nccl-tests reports both (``size`` is the whole buffer):
``algbw = bytes / time`` and ``busbw = algbw * (p-1)/p``. The model beside
each is the strategy's own ``part_cost_s`` (found by the registry for the row's
name): ``(p-1) a + ((p-1)/p) n b`` for the ring all-gather, plus
``((p-1)/p) n g`` for the reduce-scatter's additions; their sum is one ring
all-reduce's time (:meth:`~mpibench.sync.zero_ring.ZeroRing.cost_s`).
"""
from __future__ import annotations

import time

import numpy as np

from .timed import Timed

PARTS = ("reduce-scatter", "all-gather")


def is_part(name: str) -> bool:
    return name.rpartition(":")[2] in PARTS


class CollectivePart:
    """One of a sharded strategy's collectives, timed on its own."""

    in_place = True

    def __init__(self, strategy, part: str, comm, expected, backend):
        self.name = f"{strategy.name}:{part}"
        self.strategy, self.part, self.comm, self.expected, self.backend = strategy, part, comm, expected, backend
        self.buf = backend.zeros(len(expected.inputs))
        widths = np.full(strategy.layout.count, len(self.buf) // strategy.layout.count, dtype=np.int64)
        widths[: len(self.buf) % strategy.layout.count] += 1
        self._mine = self._owned_slice(widths)
        if part == "reduce-scatter":
            self.start = backend.from_host(expected.inputs)
        else:  # the owner's reduced segment, NaN where the gather must write
            start = np.full(len(self.buf), np.nan, dtype=expected.inputs.dtype)
            start[self._mine] = expected.sum[self._mine]
            self.start = backend.from_host(start)

    def _owned_slice(self, widths) -> np.ndarray:
        """The elements of the shards this rank owns (``owned_shards()`` where a rank may own several)."""
        owned = getattr(self.strategy, "owned_shards", None)
        shards = owned() if owned is not None else [self.strategy.owned_shard()]
        parts = [np.arange(int(widths[:s].sum()), int(widths[:s + 1].sum())) for s in shards if s is not None]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def time_calls(self, calls: int) -> Timed:
        call = self.strategy.reduce_scatter if self.part == "reduce-scatter" else self.strategy.all_gather
        times = np.empty(calls)
        for k in range(calls):
            self.buf[...] = self.start
            self.backend.synchronize()
            self.comm.mpi.Barrier()
            t0 = time.perf_counter()
            call(self.buf)
            self.backend.synchronize()
            times[k] = time.perf_counter() - t0
        return Timed(times, self._wrong() if calls else 0)

    def _wrong(self) -> int:
        result = self.backend.to_host(self.buf)
        if self.part == "all-gather":
            return self.expected.wrong(result)
        mine = self._mine
        off = np.abs(result[mine] - self.expected.sum[mine]) > self.expected.tolerance[mine]
        return int(np.count_nonzero(off))

    def close(self) -> None:
        pass


def parts_of(strategy, comm, expected, backend) -> list:
    """The two collective rows of a sharded strategy (none for any other)."""
    if not (hasattr(strategy, "reduce_scatter") and hasattr(strategy, "all_gather")):
        return []
    return [CollectivePart(strategy, part, comm, expected, backend) for part in PARTS]


def fix_row(row: dict) -> dict:
    """nccl-tests' bus bandwidth of a reduce-scatter or all-gather: algbw * (p-1)/p."""
    if is_part(row["strategy"]) and row.get("algbw_gbps") is not None:
        p = int(row["ranks"])
        row["busbw_gbps"] = row["algbw_gbps"] * (p - 1) / p
        row["label"] = f"{row['strategy'].rpartition(':')[2]} alone (busbw = algbw (p-1)/p)"
    return row
