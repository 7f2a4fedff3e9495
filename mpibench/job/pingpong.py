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


def ping_pong(world: MPI.Comm, sizes=PING_SIZES_BYTES) -> list[tuple[int, float]]:
    """Median half round-trip time per size, back to back, between ranks 0 and 1; [] on one
    rank (collective over ``world``). A training step's messages are timed by :mod:`.exchange`."""
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
            times = np.empty(_iterations(nbytes))
            for i in range(-5, len(times)):  # five warm-up rounds
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

