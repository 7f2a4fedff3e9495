"""MPI-side driver: the after-compute exchange when one rank's computation runs longer.

Run as ``mpirun -n N python tests/exchange_driver.py SLOW_RANK SLEEP_S``: before every exchange
rank SLOW_RANK "computes" for SLEEP_S seconds (a sleep) and the others for none. Rank 0
prints ``EXCHANGE_S <size> <seconds>`` per size; every rank prints ``POINTS <rank> <n>``, the
number of points it was handed.
"""
from __future__ import annotations

import sys
import time

from mpi4py import MPI

from mpibench.job.exchange import exchange

slow_rank, sleep_s = int(sys.argv[1]), float(sys.argv[2])
world = MPI.COMM_WORLD


def work() -> None:
    if world.Get_rank() == slow_rank:
        time.sleep(sleep_s)


points = exchange(world, work, sizes=(8, 1 << 10, 64 << 10))
print(f"POINTS {world.Get_rank()} {len(points)}", flush=True)
for nbytes, seconds in points:
    if world.Get_rank() == 0:
        print(f"EXCHANGE_S {nbytes} {seconds:.9f}", flush=True)
