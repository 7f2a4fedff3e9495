"""Sweep rate (cases per minute): many cases per launch versus one launch per case.

Runs the same sweep plan (same seeds, workers, strategies, --jobs) with
``--cases-per-launch 1`` (the baseline: one mpirun job per case) and with
``--cases-per-launch K``, alternating, and prints each run's rate, the median
of each and their ratio. Besides the rate it prints the per-case overhead: the
launch slot time per case minus the case's own time inside its batch
(``case_time_s`` of the batched run), i.e. what launching costs per case.

    python lab/studies/sweep_rate.py [--seeds 6] [--workers 2,3,4] [--jobs 2] [--k 12] [--pairs 2] [--swarm]

The launcher comes from MPIBENCH_MPIEXEC (the Makefile sets it) or the
project's default flags (tests/mpirun.py).
"""
from __future__ import annotations

import argparse
import csv
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from mpirun import mpi_env, mpirun_command  # noqa: E402


def sweep(out: Path, args: argparse.Namespace, per_launch: int) -> tuple[float, list[dict]]:
    """One sweep; its wall seconds and sweep.csv rows."""
    cmd = [sys.executable, "-m", "mpibench", "sweep", "--seeds", str(args.seeds), "--workers", args.workers,
           "--strategies", args.strategies, "--steps", str(args.steps), "--jobs", str(args.jobs),
           "--shrink-runs", "0", "--cases-per-launch", str(per_launch), "--out", str(out)]
    if args.swarm:  # each case draws strategy, recovery and knobs from its seed
        cmd += ["--swarm"]
    env = {**mpi_env(), "MPIBENCH_MPIEXEC": os.environ.get("MPIBENCH_MPIEXEC") or shlex.join(mpirun_command())}
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=3600, check=False)
    wall_s = time.perf_counter() - start
    with open(out / "sweep.csv", newline="") as f:
        return wall_s, list(csv.DictReader(f))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--workers", default="2,3,4")
    parser.add_argument("--strategies", default="ring,ps")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--k", type=int, default=12, help="cases per launch of the batched runs")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--swarm", action="store_true", help="swarm cases, as 'sweep --swarm' (--strategies "
                        "then narrows what they draw from)")
    args = parser.parse_args()
    single, batched = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            for per_launch, rates in ((1, single), (args.k, batched)):
                wall_s, rows = sweep(Path(tmp) / f"k{per_launch}-{i}", args, per_launch)
                rate = len(rows) / (wall_s / 60)
                rates.append((rate, wall_s, rows))
                print(f"pair {i}: {per_launch:>3} case(s) per launch: {len(rows)} cases in {wall_s:.0f} s "
                      f"= {rate:.1f} cases/min (load {os.getloadavg()[0]:.1f})", flush=True)
    one, many = statistics.median(r for r, _, _ in single), statistics.median(r for r, _, _ in batched)
    print(f"median: one launch per case {one:.1f} cases/min, {args.k} per launch {many:.1f} cases/min: "
          f"{many / one:.2f}x")
    for (_, wall1, rows1), (_, wallk, rowsk) in zip(single, batched):
        work_s = sum(float(r["case_time_s"]) for r in rowsk) / len(rowsk)  # a case's own time in a batch
        per_case1, per_casek = wall1 * args.jobs / len(rows1), wallk * args.jobs / len(rowsk)
        print(f"per case: own time {work_s:.2f} s; launch slot time {per_case1:.2f} s vs {per_casek:.2f} s; "
              f"overhead {per_case1 - work_s:.2f} s vs {per_casek - work_s:.2f} s")


if __name__ == "__main__":
    main()
