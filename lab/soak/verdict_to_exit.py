"""Seconds from a run's verdict to the end of its launch, over many launches.

Launches ``mpirun -n N python -m mpibench run --scenario S --recovery R`` (``--mutant M``
plants the self-test's known-bad variant M through ``--run-parts mpibench.selftest.variants:M``)
again and again (each under ``timeout -k``, stdin closed) and, for each, notes when the
``verdict:`` line arrived on the launcher's output and when the launcher exited, the
launcher's status and the status verdict.json gives. A launch that leaves more than
``--bound`` seconds after its verdict, or with a status other than its verdict's, is
counted apart. One CSV row per launch (``--csv``); the summary goes to stdout.

With ``--crash RANK:CALL`` rank RANK raises in its CALL-th ring reduction (the test
plant in ``tests/plugins/crashing``) and the time counts from its crash record
(``crashes/rank-R.json``) instead; ``--launcher`` replaces the launcher (its flags too).

``--launch`` picks one launch of the launch matrix, typed as a user types it:
``path`` (this venv's ``bin`` on the PATH, ``mpirun`` and ``python`` bare),
``full-path`` (another virtual environment's Python, no ``mpirun`` beside it, and the
launcher by its full path with the full flags; PATH=/usr/bin:/bin), ``mpich``
(``.venv-mpich``'s ``mpiexec`` and Python, ``make venv MPI=mpich``) and ``sim`` (the
simulated engine, no launcher). ``--append`` adds the rows to an existing CSV.

    nice -n 15 python lab/soak/verdict_to_exit.py --runs 100 [--mutant unweighted]
        [--scenario kill-before-compute] [--recovery respawn] [--csv FILE]
        [--launch path|full-path|mpich|sim] [--crash 1:2]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from mpirun import mpi_env, mpirun_command  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
UNEVEN_SAMPLES = 100  # mpibench.selftest.drive's: shards that end epochs on short batches
PLANT = ROOT / "tests" / "plugins" / "crashing"
VENV_BIN = Path(sys.executable).parent
MPICH_BIN = ROOT / ".venv-mpich" / "bin"
FLAGS = ["--oversubscribe", "--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1"]
COLUMNS = ["way", "scenario", "crash", "launch", "mutant", "launcher_status", "verdict_status", "after_verdict_s",
           "wall_s", "load_1min_before", "load_1min_after", "ranks", "strategy", "recovery"]


def other_python(work: Path) -> str:
    """A second virtual environment (no mpirun in it) that sees this one's packages."""
    root = work / "other-venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(root)],
                   check=True, timeout=120)
    site = next((root / "lib").glob("python*/site-packages"))
    mine = next((VENV_BIN.parent / "lib").glob("python*/site-packages"))
    (site / "project.pth").write_text(f"import site; site.addsitedir({str(mine)!r})\n")
    return str(root / "bin" / "python")


def launch_words(args) -> tuple[list[str], str, dict]:
    """(launcher and flags, Python, environment changes) of ``args.launch``."""
    if args.launch == "path":
        return ["mpirun", *FLAGS], "python", {"PATH": f"{VENV_BIN}{os.pathsep}/usr/bin:/bin"}
    if args.launch == "full-path":
        return [str(VENV_BIN / "mpirun"), *FLAGS], args.other_python, {"PATH": "/usr/bin:/bin"}
    if args.launch == "mpich":
        return [str(MPICH_BIN / "mpiexec")], str(MPICH_BIN / "python"), {}
    if args.launch == "sim":
        return [], args.python, {}
    launcher = shlex.split(args.launcher) if args.launcher else mpirun_command()
    return launcher, args.python, {}


def one_launch(args, out: Path) -> dict:
    launcher, python, env_changes = launch_words(args)
    ranks = ["--engine", "sim", "--ranks", str(args.ranks)] if args.launch == "sim" else []
    cmd = ["timeout", "-k", "10", str(args.timeout), *launcher, *(["-n", str(args.ranks)] if launcher else []),
           python, "-m", "mpibench", "run", "--strategy", args.strategy, "--scenario", args.scenario, "--recovery",
           args.recovery, "--steps", str(args.steps), *ranks, "--out", str(out)]
    if args.mutant:
        cmd += ["--run-parts", f"mpibench.selftest.variants:{args.mutant}"]  # the self-test's one hook
    samples = args.samples or (UNEVEN_SAMPLES if args.mutant else None)
    if samples:
        cmd += ["--samples", str(samples)]
    env = {**mpi_env(), **env_changes}
    env.pop("MPIBENCH_MPIEXEC", None)
    load_before = os.getloadavg()[0]
    start, verdict_at = time.monotonic(), None
    if args.crash:
        env.update(MPIBENCH_TEST_CRASH=args.crash, PYTHONPATH=os.pathsep.join(filter(None, [
            str(PLANT), env.get("PYTHONPATH")])))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, env=env)
    said = []
    for line in proc.stdout:
        said.append(line)
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
    row = {"launcher_status": status, "verdict_status": verdict, "wall_s": round(end - start, 3),
            "after_verdict_s": None if verdict_at is None else round(end - verdict_at, 3),
            "load_1min_before": round(load_before, 2), "load_1min_after": round(os.getloadavg()[0], 2)}
    if args.keep and (_late(row, args.bound) or status != verdict):  # what it said and wrote, to find why
        kept = Path(args.keep) / f"{out.name}-{os.getpid()}"
        shutil.copytree(out, kept, dirs_exist_ok=True) if out.exists() else kept.mkdir(parents=True)
        (kept / "launcher-output.txt").write_text(shlex.join(cmd) + "\n" + "".join(said))
    return row


def _late(row: dict, bound_s: float) -> bool:
    return row["after_verdict_s"] is None or row["after_verdict_s"] > bound_s


def _header(path: str) -> list[str]:
    with open(path, newline="") as fh:
        return next(csv.reader(fh), COLUMNS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--ranks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--strategy", default="ring")
    parser.add_argument("--scenario", default="kill-before-compute")
    parser.add_argument("--recovery", default="respawn")
    parser.add_argument("--mutant", default=None)
    parser.add_argument("--samples", type=int, default=None,
                        help=f"data set size (with --mutant {UNEVEN_SAMPLES} unless given: the self-test's uneven "
                             "shards, without which a weighting defect cannot show)")
    parser.add_argument("--timeout", type=int, default=150)
    parser.add_argument("--bound", type=float, default=10.0)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--crash", default=None, metavar="RANK:CALL")
    parser.add_argument("--launcher", default=None, help="the launcher and its flags (default: the tests')")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--launch", default="tests", choices=["tests", "path", "full-path", "mpich", "sim"],
                        help="one launch of the launch matrix (default: the tests' launcher, --launcher)")
    parser.add_argument("--keep", default=None, help="a folder to keep each late or wrong launch's output in")
    parser.add_argument("--append", action="store_true", help="add the rows to --csv instead of replacing it")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="verdict-to-exit-") as work:
        args.other_python = other_python(Path(work)) if args.launch == "full-path" else None
        for i in range(args.runs):
            row = {"way": args.launch, "scenario": args.scenario, "crash": args.crash or "", "launch": i,
                   "mutant": args.mutant or "", "ranks": args.ranks, "strategy": args.strategy,
                   "recovery": args.recovery, **one_launch(args, Path(work) / f"run{i}")}
            rows.append(row)
            print(",".join(str(row[c]) for c in COLUMNS), flush=True)
    if args.csv:
        fresh = not (args.append and os.path.exists(args.csv))
        header = COLUMNS if fresh else _header(args.csv)  # an older file keeps its columns
        with open(args.csv, "w" if fresh else "a", newline="") as fh:
            writer = csv.DictWriter(fh, header, extrasaction="ignore")
            if fresh:
                writer.writeheader()
            writer.writerows(rows)
    after = sorted(r["after_verdict_s"] for r in rows if r["after_verdict_s"] is not None)
    late = [r for r in rows if _late(r, args.bound)]
    wrong = [r for r in rows if r["launcher_status"] != r["verdict_status"]]
    print(f"{len(rows)} launch(es): {len(late)} without a verdict or leaving > {args.bound:g} s after it, "
          f"{len(wrong)} with a status other than the verdict's; after the verdict: median "
          f"{after[len(after) // 2] if after else float('nan'):.2f} s, worst {after[-1] if after else float('nan'):.2f} s")
    return 1 if late or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
