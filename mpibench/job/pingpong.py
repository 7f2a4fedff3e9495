"""Ping-pong between ranks 0 and 1: the per-message latency and per-byte cost the model fits.

Through the same deadline-bounded buffer calls the strategies use
(:class:`mpibench.sync.comm.Comm`); the other ranks sleep meanwhile
(:func:`.timing.on_pair`).
"""
from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from mpibench.base import stats
from mpibench.sync.comm import Comm

from .timing import on_pair

PING_SIZES_BYTES = (8, 1 << 10, 16 << 10, 256 << 10, 1 << 20)


def _iterations(nbytes: int) -> int:
    return 200 if nbytes <= 16 << 10 else 40


def ping_pong(world: MPI.Comm, sizes=PING_SIZES_BYTES) -> list[tuple[int, float]]:
    """Median half round-trip time per size, back to back, between ranks 0 and 1; [] on one
    rank (collective over ``world``). A training step's messages are timed by :mod:`.exchange`."""
    return on_pair(world, lambda comm, rank: _half_round_trips(comm, rank, sizes))


def _half_round_trips(comm: Comm, rank: int, sizes) -> list[tuple[int, float]]:
    peer = 1 - rank
    results = []
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
        results.append((buf.nbytes, stats.median(times)))
    return results
