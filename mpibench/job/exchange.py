"""Exchange after a local step: what one round of a strategy's messages costs inside a step.

Every strategy's rounds are exchanges: in each, a rank sends to one peer and receives from
one at the same time (the ring's neighbours, recursive doubling's and halving's partners, the
parameter server's pieces, Open MPI's own rounds). Inside a training step they leave straight
after the local computation, with its buffers gone from the caches. A ping-pong times one
message at a time and halves a round trip whose way back is warm; measured at p = 2 outside
the harness (a 38 KB message after a 16 MiB memory pass), its half round trip was 21-26 us
where a simultaneous exchange took 28-42 us, while back to back the two agree (10-11 us).
So the step's alpha and beta are fitted to this exchange, not to the ping-pong.

Ranks 0 and 1 take part, through the same deadline-bounded calls the strategies use
(:class:`mpibench.sync.comm.Comm`); the others sleep on a non-blocking barrier meanwhile.
"""
from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from mpibench.base import stats
from mpibench.sync.comm import Comm

from .timing import on_pair

EXCHANGE_SIZES_BYTES = (8, 1 << 10, 4 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20)
EXCHANGE_SPLITS_BYTES = (4 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10)
ROUNDS = 30
WARMUP_ROUNDS = 5


def exchange(world: MPI.Comm, work, sizes=EXCHANGE_SIZES_BYTES) -> list[tuple[int, float]]:
    """Median time of one exchange of ``n`` bytes each way between ranks 0 and 1, per size,
    both ranks having run ``work`` (untimed) first; [] on one rank (collective over ``world``).

    Rank 1 says it is ready once it has computed and starts its exchange; rank 0's clock
    starts when it hears so and stops when both its send and its receive are done, so the
    figure carries no arrival skew (a step's wait for the last rank is a part of its own).
    """
    return on_pair(world, lambda comm, rank: _timed(comm, rank, work, sizes))


def _timed(comm: Comm, rank: int, work, sizes) -> list[tuple[int, float]]:
    peer = 1 - rank
    token = np.zeros(1, dtype=np.float32)
    results = []
    for nbytes in sizes:
        send = np.ones(max(nbytes // 4, 1), dtype=np.float32)
        receive = np.empty_like(send)
        times = np.empty(ROUNDS)
        for i in range(-WARMUP_ROUNDS, ROUNDS):
            work()
            if rank == 0:
                comm.recv(token, peer)
            else:
                comm.send(token, peer)
            start = time.perf_counter()
            comm.wait([comm.irecv(receive, peer), comm.isend(send, peer)])
            if i >= 0:
                times[i] = time.perf_counter() - start
        results.append((send.nbytes, stats.median(times)))
    return results
