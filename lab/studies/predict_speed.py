"""How long ``predict`` takes at 4096 ranks: every strategy's table, in a fresh process each launch.

The goal is a 4096-rank prediction of every strategy (ring, ps, rd,
rabenseifner, hier, auto, native) at the table's default sizes within 60 s
on a 2-core machine. Each launch runs ``python -m mpibench predict --ranks
4096`` as a user would (interpreter start and imports included) and is
timed on the wall clock; the CSV gets the median and the range over the
launches, with the machine's load average at the start (the machine may be
shared, which only makes the figure larger).

    nice -n 15 python lab/studies/predict_speed.py --launches 3 --out lab/data/predict_speed.csv
"""
from __future__ import annotations

import argparse
import csv
import datetime
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOAL_S = 60.0


def one_launch(ranks: str, sizes: str, platform: str | None) -> float:
    cmd = [sys.executable, "-m", "mpibench", "predict", "--ranks", ranks, "--sizes", sizes]
    cmd += ["--platform", platform] if platform else []
    start = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT, timeout=600)
    return time.monotonic() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--ranks", default="4096")
    ap.add_argument("--sizes", default="8,64K,64M")
    ap.add_argument("--platform", default=str(ROOT / "platforms" / "smpi_4x128.toml"))
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    walls = [one_launch(args.ranks, args.sizes, args.platform) for _ in range(max(1, args.launches))]
    row = {"date": datetime.date.today().isoformat(), "what": "predict, every strategy", "ranks": args.ranks,
           "sizes": args.sizes, "platform": Path(args.platform).name, "launches": len(walls),
           "median_s": f"{statistics.median(walls):.2f}", "lo_s": f"{min(walls):.2f}", "hi_s": f"{max(walls):.2f}",
           "goal_s": GOAL_S, "load_average": f"{load:.1f}", "within_goal": max(walls) <= GOAL_S, "tag": "measured"}
    print(", ".join(f"{k}={v}" for k, v in row.items()))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, list(row))
            w.writeheader()
            w.writerow(row)
    return 0 if row["within_goal"] else 1


if __name__ == "__main__":
    sys.exit(main())
