"""The data-movement floor: what a reduce-scatter + all-gather must move, without MPI.

On p ranks of one host every all-reduce by reduce-scatter and all-gather has
each rank bring in the (p - 1) segments of n/p it reduces, add each into its
own, and bring in the (p - 1) reduced segments it lacks. This candidate does
exactly those copies and adds in NumPy on every rank at once (after the same
barrier as every row), from local source arrays of the same sizes in place of
a peer's memory, so the ranks share the memory bandwidth as the real thing
does. No message is sent and nothing is reduced across ranks: its ``errors``
is empty. A strategy cannot beat it on one host; ``x floor`` says how close
it gets.
"""
from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from .timed import Timed

FLOOR = "floor"
LABEL = "data-movement floor: a reduce-scatter + all-gather's copies and adds in NumPy, no MPI"


class MovementFloor:
    """One size's floor on this rank (``time_calls`` as every candidate; nothing checked)."""

    name = FLOOR
    in_place = True

    def __init__(self, mpi: MPI.Comm, count: int, dtype=np.float32):
        self.mpi, p = mpi, max(mpi.Get_size(), 1)
        self.own = np.ones(count, dtype=dtype)
        self.peer = np.ones(count, dtype=dtype)  # stands in for the other ranks' buffers
        self.scratch = np.empty(count, dtype=dtype)
        edges = np.linspace(0, count, p + 1).astype(np.int64)
        mine = mpi.Get_rank() % p
        self.others = [(int(a), int(b)) for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])) if i != mine]

    def once(self) -> None:
        own, peer, scratch = self.own, self.peer, self.scratch
        for a, b in self.others:  # reduce-scatter: bring a segment in, add it
            np.copyto(scratch[a:b], peer[a:b])
            np.add(own[a:b], scratch[a:b], out=own[a:b])
        for a, b in self.others:  # all-gather: bring a reduced segment in
            np.copyto(own[a:b], peer[a:b])

    def time_calls(self, calls: int) -> Timed:
        times = np.empty(calls)
        for k in range(calls):
            self.mpi.Barrier()
            start = time.perf_counter()
            self.once()
            times[k] = time.perf_counter() - start
        return Timed(times, 0)

    def close(self) -> None:
        pass
