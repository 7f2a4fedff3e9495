"""A ring all-reduce in plain mpi4py: the transport floor the suite's ring is held to.

No deadline, no fault wrapper, no buckets, no strategy code: p - 1 reduce-scatter
steps (``Sendrecv`` of one n/p segment to the right neighbour and from the left,
then a NumPy add into the own segment) and p - 1 all-gather steps (``Sendrecv``
straight into place). It moves exactly the data a ring moves, over the same MPI
transport, so the suite's ``ring`` over it is the cost of the suite's layers,
and it over the data-movement floor is the cost of the MPI's own transport
(e.g. single-copy CMA at 4 KiB pages) beyond plain memory copies.
"""
from __future__ import annotations

import numpy as np
from mpi4py import MPI


class PlainRing:
    """Ring all-reduce of ``buffer`` in place (float32 sum), pre-allocated, buffer-based calls."""

    def __init__(self, mpi_comm: MPI.Comm, length: int):
        self.mpi, self.p, self.rank = mpi_comm, mpi_comm.Get_size(), mpi_comm.Get_rank()
        self.buffer = np.zeros(length, np.float32)
        edges = np.linspace(0, length, self.p + 1).astype(int)
        self.bounds = list(zip(edges[:-1], edges[1:]))
        self.scratch = np.empty(max((hi - lo for lo, hi in self.bounds), default=0), np.float32)
        self.right, self.left = (self.rank + 1) % self.p, (self.rank - 1) % self.p

    def reduce(self, buf: np.ndarray) -> None:
        p, r = self.p, self.rank
        for step in range(p - 1):  # reduce-scatter: after it, segment (r + 1) % p is complete here
            send_lo, send_hi = self.bounds[(r - step) % p]
            recv_lo, recv_hi = self.bounds[(r - step - 1) % p]
            incoming = self.scratch[:recv_hi - recv_lo]
            self.mpi.Sendrecv(buf[send_lo:send_hi], self.right, 0, incoming, self.left, 0)
            np.add(buf[recv_lo:recv_hi], incoming, out=buf[recv_lo:recv_hi])
        for step in range(p - 1):  # all-gather of the complete segments, straight into place
            send_lo, send_hi = self.bounds[(r + 1 - step) % p]
            recv_lo, recv_hi = self.bounds[(r - step) % p]
            self.mpi.Sendrecv(buf[send_lo:send_hi], self.right, 1, buf[recv_lo:recv_hi], self.left, 1)
