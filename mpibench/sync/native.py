"""Baseline: MPI's own Allreduce of the step buffer, as one piece (or, with run --overlap, one
Iallreduce per bucket, started as the backward pass makes it ready)."""
from __future__ import annotations

import math

from .base import Reduction, SyncStrategy

SMALL_BYTES = 10 << 10  # where the model takes Open MPI to switch from recursive doubling


def native_cost_s(cal, p: int, nbytes: float) -> float:
    """MPI's own allreduce, modelled by the algorithms Open MPI picks by size."""
    if p <= 1:
        return cal.call_overhead_s
    rounds = math.ceil(math.log2(p))
    if nbytes <= SMALL_BYTES:
        return rounds * (cal.alpha_s + nbytes * cal.beta_s_per_byte + nbytes * cal.gamma_s_per_byte(nbytes))
    share = (p - 1) / p
    return (2 * rounds * cal.alpha_s + 2 * share * nbytes * cal.beta_s_per_byte
            + share * nbytes * cal.gamma_s_per_byte(nbytes))


class NativeAllreduce(SyncStrategy):
    name = "native"
    summary = "MPI's own non-blocking Allreduce of the whole buffer (the baseline)"
    option_names = ()
    # bench rows that time MPI's own allreduce by another path (blocking, compiled C, the
    # independent anchor loop): the cost model reads them as this strategy
    bench_rows = ("blocking", "c_floor", "anchor")
    cost_assumption = "native: recursive doubling up to 10 KiB, reduce-scatter + allgather above"
    baseline = True

    @staticmethod
    def modelled_as(nbytes: float) -> tuple[str, ...]:
        return ("rd",) if nbytes <= SMALL_BYTES else ("rabenseifner",)  # Open MPI's choice by size
    bench_label = "in-step sync: Iallreduce polled against the deadline, plus a copy"

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        return native_cost_s(cal, p, nbytes)

    @staticmethod
    def message_bytes(p: int, nbytes: float, options: dict | None = None) -> float:
        return nbytes if nbytes <= SMALL_BYTES else nbytes / p  # whole buffer below the switch

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self._result = backend.zeros(n_params + 1)

    def reduce(self, buf) -> Reduction:
        self.comm.allreduce(buf, self._result)
        buf[...] = self._result
        return Reduction(self.comm.worker_ids, [(0, len(buf))], len(buf))

    # run --overlap: each bucket an Iallreduce of its slice. The library moves it on whenever the rank
    # is inside MPI (its start, the next bucket's, complete); nothing progresses it during numpy work.
    overlaps = True

    def start_bucket(self, offset: int, length: int):
        end = offset + length
        return offset, length, self.comm.iallreduce(self.buffer[offset:end], self._result[offset:end])

    def finish_buckets(self, handles: list) -> list[Reduction]:
        self.comm.complete([started for _, _, started in handles])
        total = len(self.buffer)
        for offset, length, _ in handles:
            self.buffer[offset:offset + length] = self._result[offset:offset + length]
        return [Reduction(self.comm.worker_ids, [(offset, length)], total) for offset, length, _ in handles]
