"""Steps per second with invariant checks on every step versus (almost) off.

Runs `python -m mpibench run` under mpirun in alternating pairs and prints the
median rate of each and their ratio. "Off" checks only step 0 (--check-every
equal to --steps); both runs gather the same per-step records.

    python benchmarks/check_overhead.py [--ranks 8] [--steps 200] [--pairs 3]
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from mpirun import run_mpi  # noqa: E402


def rate(ranks: int, steps: int, check_every: int, strategy: str) -> float:
    with tempfile.TemporaryDirectory() as out:
        job = run_mpi(ranks, ["run", "--strategy", strategy, "--steps", str(steps),
                              "--check-every", str(check_every)], Path(out), timeout=600)
        if job.returncode != 0:
            raise SystemExit(job.text)
        wall_s = float(re.search(r"wall time ([0-9.]+) s", job.stdout).group(1))
    return steps / wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--strategy", default="native")
    args = parser.parse_args()
    on, off = [], []
    for i in range(args.pairs):
        on.append(rate(args.ranks, args.steps, 1, args.strategy))
        off.append(rate(args.ranks, args.steps, args.steps, args.strategy))
        print(f"pair {i + 1}: checks on {on[-1]:.1f} steps/s, off {off[-1]:.1f} steps/s", flush=True)
    m_on, m_off = statistics.median(on), statistics.median(off)
    print(f"median steps/s  on: {m_on:.1f}  off: {m_off:.1f}  overhead (off/on): {m_off / m_on:.2f}x")


if __name__ == "__main__":
    main()
