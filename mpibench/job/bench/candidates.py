"""What a benchmark row times: a strategy, the blocking baseline, or the C floor.

Every candidate answers ``time_calls(calls) -> (seconds per call, wrong
elements)`` on this rank, with the same harness around each call: refill the
buffer with this rank's inputs when the call reduces in place, meet at a
barrier (neither timed), then time the call. Nothing else runs between the
timed calls: the result of the batch's last call is checked after it. A check
between calls (reading the expected sum and its tolerance, three buffers of the
message's size) evicted the caches that IMB and OSU leave warm and, while it
allocated temporaries, made MPI's own scratch buffer page-fault inside the
timed call: 2.7x at 1 MiB (docs/benchmarks.md). The rows differ only in
what the call is:

* ``blocking``: mpi4py's plain ``Comm.Allreduce`` on the benchmark's
  communicator, no wrapper and no deadline: what a user's code gets. It is
  the denominator of every speed ratio.
* ``c_floor``: the same loop in C (:mod:`.cfloor`), the no-Python floor.
* a strategy by its registry name (``ring``, ``ps``, ``native`` ...): its
  ``reduce`` as the in-step synchronisation calls it, through the
  deadline-polled communicator. ``native`` is MPI's ``Iallreduce`` polled
  against the deadline plus a copy back, not the call a user makes.
"""
from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from mpibench.base.buffer_layout import mapped_layout_empty

from .names import BLOCKING, C_FLOOR
from .timed import Timed


class BlockingAllreduce:
    """``Comm.Allreduce`` exactly as user code calls it."""

    name = BLOCKING

    def __init__(self, mpi: MPI.Comm, expected, in_place: bool):
        self.mpi, self.expected, self.in_place = mpi, expected, in_place
        self.buf = mapped_layout_empty(len(expected.inputs), expected.inputs.dtype)  # as the inputs

    def time_calls(self, calls: int) -> Timed:
        mpi, inputs, buf = self.mpi, self.expected.inputs, self.buf
        send = MPI.IN_PLACE if self.in_place else inputs
        times = np.empty(calls)
        for k in range(calls):
            if self.in_place:
                buf[...] = inputs
            mpi.Barrier()
            start = time.perf_counter()
            mpi.Allreduce(send, buf, op=MPI.SUM)
            times[k] = time.perf_counter() - start
        return Timed(times, self.expected.wrong(buf) if calls else 0)

    def close(self) -> None:
        pass


class CFloorAllreduce:
    """The C loop: the whole batch (refill when in place, barrier, timed call) runs in C,
    and the last call's result is checked after it, as for every other row."""

    name = C_FLOOR

    def __init__(self, floor, mpi: MPI.Comm, expected, in_place: bool):
        self.floor, self.mpi, self.expected, self.in_place = floor, mpi, expected, in_place
        self.inputs = np.ascontiguousarray(expected.inputs)
        self.buf = mapped_layout_empty(len(self.inputs), self.inputs.dtype)  # as blocking's

    def time_calls(self, calls: int) -> Timed:
        if not calls:
            return Timed(np.empty(0), 0)
        times = self.floor.run(self.mpi, self.inputs, self.buf, self.in_place, calls)
        return Timed(times, self.expected.wrong(self.buf))

    def close(self) -> None:
        pass


class StrategyReduce:
    """A sync strategy's ``reduce`` of its own step buffer (always in place)."""

    in_place = True

    def __init__(self, strategy, comm, expected, backend):
        self.name = strategy.name
        self.strategy, self.comm, self.expected, self.backend = strategy, comm, expected, backend
        self.inputs = backend.from_host(expected.inputs)

    def time_calls(self, calls: int) -> Timed:
        strategy, backend, buf = self.strategy, self.backend, self.strategy.buffer
        times = np.empty(calls)
        for k in range(calls):
            buf[...] = self.inputs
            backend.synchronize()
            self.comm.mpi.Barrier()
            start = time.perf_counter()
            strategy.reduce(buf)
            backend.synchronize()
            times[k] = time.perf_counter() - start
        return Timed(times, self.expected.wrong(backend.to_host(buf)) if calls else 0)

    def close(self) -> None:
        self.strategy.close()
