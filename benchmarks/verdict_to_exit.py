"""Seconds from a run's verdict to the end of its launch, over many launches.

Launches ``mpirun -n N python -m mpibench run --scenario S --recovery R [--mutant M]``
again and again (each under ``timeout -k``, stdin closed) and, for each, notes when the
``verdict:`` line arrived on the launcher's output and when the launcher exited, the
launcher's status and the status verdict.json gives. A launch that leaves more than
``--bound`` seconds after its verdict, or with a status other than its verdict's, is
counted apart. One CSV row per launch (``--csv``); the summary goes to stdout.

With ``--crash RANK:CALL`` rank RANK raises in its CALL-th ring reduction (the test
plant in ``tests/plugins/crashing``) and the time counts from its crash record
(``crashes/rank-R.json``) instead; ``--launcher`` replaces the launcher (its flags too).

    nice -n 15 python benchmarks/verdict_to_exit.py --runs 100 [--mutant unweighted]
        [--scenario kill-before-compute] [--recovery respawn] [--csv FILE]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from mpirun import mpi_env, mpirun_command  # noqa: E402

PLANT = Path(__file__).resolve().parent.parent / "tests" / "plugins" / "crashing"
COLUMNS = ["launch", "mutant", "launcher_status", "verdict_status", "after_verdict_s", "wall_s"]


def one_launch(args, out: Path) -> dict:
    launcher = shlex.split(args.launcher) if args.launcher else mpirun_command()
    cmd = ["timeout", "-k", "10", str(args.timeout), *launcher, "-n", str(args.ranks), args.python,
           "-m", "mpibench", "run", "--strategy", args.strategy, "--scenario", args.scenario, "--recovery",
           args.recovery, "--steps", str(args.steps), "--out", str(out)]
    if args.mutant:
        cmd += ["--mutant", args.mutant]
    start, verdict_at = time.monotonic(), None
    env = mpi_env()
    if args.crash:
        env.update(MPIBENCH_TEST_CRASH=args.crash, PYTHONPATH=os.pathsep.join(filter(None, [
            str(PLANT), env.get("PYTHONPATH")])))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, env=env)
    for line in proc.stdout:
        if verdict_at is None and line.startswith("verdict:"):
            verdict_at = time.monotonic()
    status = proc.wait()
    end = time.monotonic()
    if args.crash:  # from the crash record's time, on the wall clock
        records = sorted((out / "crashes").glob("rank-*.json"))
        verdict_at = end - (time.time() - records[0].stat().st_mtime) if records else None
    try:
        verdict = json.loads((out / "verdict.json").read_text())["exit_status"]
    except (OSError, ValueError, KeyError):
        verdict = None
    return {"launcher_status": status, "verdict_status": verdict, "wall_s": round(end - start, 3),
            "after_verdict_s": None if verdict_at is None else round(end - verdict_at, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--ranks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--strategy", default="ring")
    parser.add_argument("--scenario", default="kill-before-compute")
    parser.add_argument("--recovery", default="respawn")
    parser.add_argument("--mutant", default=None)
    parser.add_argument("--timeout", type=int, default=150)
    parser.add_argument("--bound", type=float, default=10.0)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--crash", default=None, metavar="RANK:CALL")
    parser.add_argument("--launcher", default=None, help="the launcher and its flags (default: the tests')")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="verdict-to-exit-") as work:
        for i in range(args.runs):
            row = {"launch": i, "mutant": args.mutant or "", **one_launch(args, Path(work) / f"run{i}")}
            rows.append(row)
            print(",".join(str(row[c]) for c in COLUMNS), flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            writer = csv.DictWriter(fh, COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
    after = sorted(r["after_verdict_s"] for r in rows if r["after_verdict_s"] is not None)
    late = [r for r in rows if r["after_verdict_s"] is None or r["after_verdict_s"] > args.bound]
    wrong = [r for r in rows if r["launcher_status"] != r["verdict_status"]]
    print(f"{len(rows)} launch(es): {len(late)} without a verdict or leaving > {args.bound:g} s after it, "
          f"{len(wrong)} with a status other than the verdict's; after the verdict: median "
          f"{after[len(after) // 2] if after else float('nan'):.2f} s, worst {after[-1] if after else float('nan'):.2f} s")
    return 1 if late or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
