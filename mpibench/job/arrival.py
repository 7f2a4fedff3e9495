"""Arrival skew: how far apart two ranks finish the same local work started together.

In a training step every rank computes, then meets the others in the sync; the step
lasts as long as the last rank to arrive, so the spread of the ranks' local work is a
part of the step of its own (the wait, :mod:`.stepparts`). On a shared host that
spread is not noise around zero: in a launch where another process shares one rank's
core, that rank finishes later in step after step, and a model without the wait was
seen 1.3-1.5x below the measured step in such launches.

Ranks 0 and 1 meet (a token each way through :class:`mpibench.sync.comm.Comm`), run
the same local work at once and each time it; after :data:`ROUNDS` rounds (and
:data:`WARMUP_ROUNDS` untimed), rank 0 gets rank 1's times. The figure is the median
over rounds of the two times' difference, over the median of all the times: the wait
per second of local work, which the model scales to each point's local step. The other
ranks sleep meanwhile; one rank gives 0.
"""
from __future__ import annotations

import time

import numpy as np

from mpibench.sync.comm import Comm

from .timing import on_pair

ROUNDS = 40
WARMUP_ROUNDS = 3


def skew_per_work_s(world, work) -> float:
    """Seconds of arrival skew per second of ``work`` between ranks 0 and 1 (collective over ``world``)."""
    found = on_pair(world, lambda comm, rank: _measured(comm, rank, work))
    return float(found) if found != [] else 0.0


def _measured(comm: Comm, rank: int, work) -> float | None:
    peer = 1 - rank
    token_out, token_in = np.zeros(1, dtype=np.float32), np.empty(1, dtype=np.float32)
    times = np.empty(ROUNDS)
    for i in range(-WARMUP_ROUNDS, ROUNDS):
        comm.sendrecv(token_out, peer, token_in, peer)  # start together
        start = time.perf_counter()
        work()
        if i >= 0:
            times[i] = time.perf_counter() - start
    theirs = np.empty_like(times)
    comm.wait([comm.irecv(theirs, peer), comm.isend(times, peer)])
    return skew_fraction(times, theirs) if rank == 0 else None


def skew_fraction(mine, theirs) -> float:
    """Median over rounds of ``|mine - theirs|`` over the median of every time (0 when the work takes none)."""
    mine, theirs = np.asarray(mine, float), np.asarray(theirs, float)
    typical = float(np.median(np.concatenate([mine, theirs])))
    return float(np.median(np.abs(mine - theirs))) / typical if typical > 0 else 0.0
