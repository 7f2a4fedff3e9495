"""Cases per hour of ``sweep --engine sim --exhaustive`` over every built-in strategy and both recoveries.

Runs the exhaustive sweep ``--launches`` times, each for ``--minutes`` (a time budget: the plan
runs in order, p = 2 first, so a short budget covers the small worlds), and appends one row to
``--record`` (default ``docs/measured/sim-exhaustive.csv``): the date, the launches, the cases
run, the median cases per hour over the launches with the lowest and highest (the interval),
the same per CPU hour of the sweep process (what an idle machine would give), the findings and
how many were reproduced on MPI, and the host's 1-minute load average at the start and end
(this machine is shared: the wall-clock rate follows its load).

    nice -n 15 python benchmarks/sim_exhaustive_rate.py [--minutes 10] [--launches 1] [--workers 2,3,4]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

STRATEGIES = "ring,ps,rd,rabenseifner,hier,auto,native"
COLUMNS = ["date", "tag", "launches", "strategies", "recoveries", "workers", "cases", "findings", "reproduced_on_mpi",
           "cases_per_hour", "cases_per_hour_low", "cases_per_hour_high", "cases_per_cpu_hour", "load_avg_start",
           "load_avg_end", "plan_cases"]


def one_launch(minutes: float, workers: str, out: Path) -> tuple[dict, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "mpibench", "sweep", "--engine", "sim", "--exhaustive", "--strategies",
                    STRATEGIES, "--recoveries", "shrink,respawn", "--workers", workers, "--time-budget", str(minutes),
                    "--out", str(out), "--force"], check=False, stdin=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads((out / "sweep.json").read_text()), cpu_s


def plan_cases(workers: str) -> int:
    """Cases in the whole plan (what a run to the end covers)."""
    from mpibench.sim.exhaustive import ExhaustivePlan

    return ExhaustivePlan(workers=tuple(int(w) for w in workers.split(",")), strategies=tuple(STRATEGIES.split(",")),
                          recoveries=("shrink", "respawn")).count()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--launches", type=int, default=1)
    ap.add_argument("--workers", default="2,3,4")
    ap.add_argument("--record", type=Path, default=Path("docs/measured/sim-exhaustive.csv"))
    a = ap.parse_args()
    load_start = os.getloadavg()[0]
    runs = []
    with tempfile.TemporaryDirectory(prefix="sim-exhaustive-") as tmp:
        for i in range(a.launches):
            runs.append(one_launch(a.minutes, a.workers, Path(tmp) / f"launch{i}"))
    rates = [s["cases_per_hour"] for s, _ in runs]
    cases = sum(s["cases"] for s, _ in runs)
    row = {"date": datetime.date.today().isoformat(), "tag": "simulated (rate measured)", "launches": a.launches,
           "strategies": STRATEGIES.replace(",", " "), "recoveries": "shrink respawn", "workers": a.workers,
           "cases": cases, "findings": sum(s["findings"] for s, _ in runs),
           "reproduced_on_mpi": sum(s["on_mpi"].get("reproduced on MPI", 0) for s, _ in runs),
           "cases_per_hour": round(statistics.median(rates)), "cases_per_hour_low": min(rates),
           "cases_per_hour_high": max(rates),
           "cases_per_cpu_hour": round(cases / sum(c for _, c in runs) * 3600) if sum(c for _, c in runs) else "",
           "load_avg_start": round(load_start, 1), "load_avg_end": round(os.getloadavg()[0], 1),
           "plan_cases": plan_cases(a.workers)}
    a.record.parent.mkdir(parents=True, exist_ok=True)
    new = not a.record.exists()
    with open(a.record, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow(row)
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
