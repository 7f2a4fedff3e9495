"""MPI-side driver: ``mpirun -n N python tests/arrival_driver.py RANK0_S RANK1_S``; rank 0's
work sleeps RANK0_S, rank 1's RANK1_S; every rank prints ``SKEW <rank> <figure>``."""
from __future__ import annotations

import sys
import time

from mpi4py import MPI

from mpibench.job.arrival import skew_per_work_s

world = MPI.COMM_WORLD
sleep_s = {0: float(sys.argv[1]), 1: float(sys.argv[2])}.get(world.Get_rank(), 0.0)
figure = skew_per_work_s(world, lambda: time.sleep(sleep_s))
print(f"SKEW {world.Get_rank()} {figure!r}", flush=True)
