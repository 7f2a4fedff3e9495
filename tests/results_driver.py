"""Under mpirun: the results layer's part of the main job on a tiny plan (for tests).

``python tests/results_driver.py OUT`` calibrates, measures scaling at
p = 1, 2, 4, ... up to the world size on a small model, adds modelled rows to
any measured ``OUT/bench.csv``, and writes scaling.csv, comparison.csv,
run.json and report.html into OUT.
"""
import os
import sys

from mpi4py import MPI

from mpibench.base import runinfo
from mpibench.base.config import RunConfig
from mpibench.kernels import select_backend
from mpibench.job import finish as job
from mpibench.job.scaling import ScalingPlan

PLAN = ScalingPlan(features=8, hidden=16, classes=3, samples=600, weak_batch=16, strong_batch=48, steps=6)


def main(out: str) -> None:
    world = MPI.COMM_WORLD
    base = RunConfig()
    calibration = job.start(world, base, PLAN)
    hosts = world.allgather(runinfo.this_host())
    if world.Get_rank() == 0:
        os.makedirs(out, exist_ok=True)
        runinfo.write(out, runinfo.describe(base.as_dict(), hosts, {"calibration": calibration.as_dict()}))
    job.finish(world, out, base, calibration, select_backend("cpu"), ["native", "ps", "ring"], None, PLAN)
    if world.Get_rank() == 0:  # no scenarios ran, so no verdict: the page says it was not judged
        job.write_page(out)


if __name__ == "__main__":
    main(sys.argv[1])
