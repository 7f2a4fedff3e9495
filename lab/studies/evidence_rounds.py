"""One launch of the evidence-cost measurement: the same run with history on and off, interleaved.

    mpirun -n 2 python lab/studies/evidence_rounds.py --rounds 5 --steps 200 --features 256 --hidden 1024 --batch 640

Run under mpirun by ``lab/studies/check_overhead.py --within-launch``. Every round runs
the case twice in this one launch, once writing its history (``on``) and once
not (``off``, ``MPIBENCH_HISTORY=off``), the order alternating from round to
round, each into a fresh folder that is deleted afterwards. Both halves of a
round share the launch's state, so ``on / off`` loop time is a ratio paired
inside the launch, which pairs of separate launches are not (on a shared host
two launches can land in states several-fold apart). The loop time is the run's
wall time less its online check (the check runs after the loop, as in
``mpibench run``). Rank 0 prints one line per round,
``round K: on S s check S s off S s steps N N``, and nothing else on success.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def one_run(config, world, history: bool, parent: str) -> tuple[float, float, int]:
    """(loop seconds, online check seconds, steps done) of one run of ``config`` into a fresh folder under ``parent``."""
    from mpibench.job.caseloop import run_in_folder
    from mpibench.job.continuation import SingleRun
    from mpibench.job.runfolder import backend_for, open_out
    from mpibench.job.runner import free_comm, recoverable_dup

    os.environ["MPIBENCH_HISTORY"] = "on" if history else "off"  # read when the case opens its history
    folder = os.path.join(parent, "on" if history else "off")
    out, hosts = open_out(world, folder)
    world.Barrier()
    start = time.perf_counter()
    summary, comm = run_in_folder(config, recoverable_dup(world), backend_for(config), SingleRun(out), hosts)
    loop_s = time.perf_counter() - start - summary.check_s
    free_comm(comm)
    world.Barrier()
    if world.Get_rank() == 0:
        shutil.rmtree(folder, ignore_errors=True)
    return loop_s, summary.check_s, summary.steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="untimed on/off rounds first (imports, caches)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--strategy", default="native")
    parser.add_argument("--check-every", type=int, default=1)
    args = parser.parse_args()
    from mpi4py import MPI

    from mpibench.base.config import RunConfig

    world = MPI.COMM_WORLD
    config = RunConfig(strategy=args.strategy, steps=args.steps, check_every=args.check_every,
                       features=args.features, hidden=args.hidden, batch_size=args.batch, classes=args.classes,
                       samples=max(1200, args.batch * world.Get_size() * 4))
    config.validate(world.Get_size())
    parent = world.bcast(tempfile.mkdtemp(prefix="evidence-rounds-") if world.Get_rank() == 0 else None)
    try:
        for k in range(-args.warmup, args.rounds):
            order = (True, False) if k % 2 == 0 else (False, True)  # ABBA: neither half always goes first
            times = {history: one_run(config, world, history, parent) for history in order}
            if world.Get_rank() == 0 and k >= 0:
                (on_s, check_s, on_steps), (off_s, _, off_steps) = times[True], times[False]
                print(f"round {k + 1}: on {on_s:.6f} s check {check_s:.6f} s off {off_s:.6f} s "
                      f"steps {on_steps} {off_steps}", flush=True)
    finally:
        if world.Get_rank() == 0:
            shutil.rmtree(parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
