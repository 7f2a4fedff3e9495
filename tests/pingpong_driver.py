"""MPI-side driver: the after-compute ping-pong when one rank's computation runs longer.

Run as ``mpirun -n 2 python tests/pingpong_driver.py SLOW_RANK SLEEP_S``: before every round
trip rank SLOW_RANK "computes" for SLEEP_S seconds (a sleep) and the other for none. Rank 0
prints ``HALF_RTT_S <size> <seconds>`` per size.
"""
from __future__ import annotations

import sys
import time

from mpi4py import MPI

from mpibench.job.pingpong import ping_pong

slow_rank, sleep_s = int(sys.argv[1]), float(sys.argv[2])
world = MPI.COMM_WORLD


def work() -> None:
    if world.Get_rank() == slow_rank:
        time.sleep(sleep_s)


for nbytes, half_rtt_s in ping_pong(world, work, sizes=(8, 1 << 10)):
    if world.Get_rank() == 0:
        print(f"HALF_RTT_S {nbytes} {half_rtt_s:.9f}", flush=True)
