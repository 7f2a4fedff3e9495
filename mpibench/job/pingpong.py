"""Ping-pong between ranks 0 and 1: the per-message latency and per-byte cost the model fits.

Through the same deadline-bounded buffer calls the strategies use
(:class:`mpibench.sync.comm.Comm`); the other ranks sleep on a non-blocking
barrier meanwhile (:func:`.timing.idle_until_released`).
"""
from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from mpibench.sync.comm import Comm

from .timing import idle_until_released

PING_SIZES_BYTES = (8, 1 << 10, 16 << 10, 256 << 10, 1 << 20)


def _iterations(nbytes: int) -> int:
    return 200 if nbytes <= 16 << 10 else 40


def ping_pong(world: MPI.Comm, work=None, sizes=PING_SIZES_BYTES) -> list[tuple[int, float]]:
    """Median half round-trip time per size, between ranks 0 and 1; [] on one rank.

    With ``work``, both ranks call it before every round trip (untimed), so the
    messages leave and arrive as they do in a training step: straight after
    the local computation, not back to back. Rank 1 then says it is ready
    (untimed) and waits, as a step's early arrival waits for the last: rank 0's
    clock starts once both have computed, so the round trip carries no arrival
    skew (the step's wait for the last rank is a part of its own).
    """
    if world.Get_size() < 2:
        return []
    rank = world.Get_rank()
    results = []
    if rank in (0, 1):
        pair = world.Split(0, rank)
        comm = Comm(pair, deadline_s=30.0)
        peer = 1 - rank
        for nbytes in sizes:
            buf = np.zeros(max(nbytes // 4, 1), dtype=np.float32)
            times = np.empty(_iterations(nbytes) if work is None else 30)
            ready = np.zeros(1, dtype=np.float32)
            for i in range(-5, len(times)):  # five warm-up rounds
                if work is not None:
                    work()
                    _ready(comm, rank, peer, ready)
                start = time.perf_counter()
                if rank == 0:
                    comm.send(buf, peer)
                    comm.recv(buf, peer)
                else:
                    comm.recv(buf, peer)
                    comm.send(buf, peer)
                if i >= 0:
                    times[i] = (time.perf_counter() - start) / 2
            results.append((buf.nbytes, float(np.median(times))))
        pair.Free()
    else:
        world.Split(MPI.UNDEFINED, rank)
    idle_until_released(world)
    return world.bcast(results, root=0)


def _ready(comm: Comm, rank: int, peer: int, token: np.ndarray) -> None:
    """Rank 1 tells rank 0 it has finished its own work (a one-float message, untimed)."""
    if rank == 0:
        comm.recv(token, peer)
    else:
        comm.send(token, peer)
