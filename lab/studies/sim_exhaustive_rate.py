"""Cases per hour of ``sweep --engine sim --exhaustive`` over every built-in strategy and both
recoveries, and the whole plan run to its end block by block.

Three uses, each appending rows to ``--record`` (default ``lab/data/sim-exhaustive.csv``;
``--block``'s to ``--blocks-record``, default ``lab/data/sim-exhaustive-blocks.csv``):

* the rate (default): the exhaustive sweep ``--launches`` times, each for ``--minutes`` (a time
  budget: the plan runs in order, p = 2 first), into a temporary folder; one row with the median
  cases per hour over the launches and the lowest and highest (the interval);
* ``--block P:STRATEGY:RECOVERY ... --keep DIR``: one chunk of the whole plan, each named block
  (every case of world size P under that strategy and recovery) in its own folder under ``DIR``,
  resumed from the record an earlier chunk left there (``sweep --resume``), for at most
  ``--minutes`` in all (with ``--momentum``: every case with optimizer state, in a folder of its own,
  the schedules ``run`` refuses left out and counted by kind in the row's ``refused``); one row per block with the cases this chunk ran and their rate, and, for
  the block's record so far, its cases (against the block's plan), findings and how many of
  them reproduced on MPI;
* ``--summary --keep DIR``: one row for every block whose record is complete under ``DIR``: the
  cases, findings, reproduced, and the median rate over the chunks that ran them (with the
  lowest and highest), against the whole plan's cases (p = 2, 3, 4, every strategy, both
  recoveries).

Every row also gives the rate per CPU hour of the sweep process (what a machine without other
load would approach), the sweep's ``--jobs`` and the host's 1-minute load average at the start
and end (this machine is shared: the wall-clock rate follows its load).

    nice -n 15 python lab/studies/sim_exhaustive_rate.py [--minutes 10] [--launches 1] [--jobs 2]
    nice -n 15 python lab/studies/sim_exhaustive_rate.py --block 4:ring:shrink --keep runs/x --minutes 9
    nice -n 15 python lab/studies/sim_exhaustive_rate.py --block 4:hsdp:respawn --momentum 0.9 --keep runs/x
    python lab/studies/sim_exhaustive_rate.py --summary --keep runs/x
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
import time
from pathlib import Path

STRATEGIES = "ring,ps,rd,rabenseifner,hier,auto,native,zero-ring,zero-halving"
COLUMNS = ["date", "tag", "launches", "strategies", "recoveries", "workers", "cases", "findings", "reproduced_on_mpi",
           "cases_per_hour", "cases_per_hour_low", "cases_per_hour_high", "cases_per_cpu_hour", "load_avg_start",
           "load_avg_end", "plan_cases", "jobs", "cases_recorded", "momentum", "refused"]
CHUNKS = "chunks.csv"  # under --keep: one line per block per chunk (what --summary reads)


def sweep_argv(workers: str, strategies: str, recoveries: str, out: Path, minutes: float, jobs: int,
               resume: bool, momentum: float = 0.0) -> list[str]:
    return [sys.executable, "-m", "mpibench", "sweep", "--engine", "sim", "--exhaustive", "--strategies", strategies,
            "--recoveries", recoveries, "--workers", workers, "--time-budget", str(minutes), "--jobs", str(jobs),
            "--out", str(out), "--resume" if resume else "--force"] + (["--momentum", f"{momentum:g}"] if momentum else [])


def one_launch(argv: list[str], out: Path) -> tuple[dict, float]:
    """The sweep's summary and the CPU seconds its process (and its forks) spent."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=False, stdin=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads((out / "sweep.json").read_text()), cpu_s


def plan_cases(workers: str, strategies: str = STRATEGIES, recoveries: str = "shrink,respawn",
               momentum: float = 0.0) -> int:
    """Cases in the whole plan (what a run to the end covers; with momentum, the refused schedules left out)."""
    return _plan(workers, strategies, recoveries, momentum).count()


def _plan(workers: str, strategies: str, recoveries: str, momentum: float = 0.0):
    from mpibench.sim.exhaustive import ExhaustivePlan

    return ExhaustivePlan(workers=tuple(int(w) for w in workers.split(",")), strategies=tuple(strategies.split(",")),
                          recoveries=tuple(recoveries.split(",")), momentum=momentum)


def refused_text(p: str, strategy: str, recovery: str, momentum: float) -> str:
    """The block's refused schedules by kind (``N: kind; ...``), or "" without momentum."""
    if not momentum:
        return ""
    found = _plan(p, strategy, recovery, momentum).refusals(int(p), strategy, recovery)
    return "; ".join(f"{n}: {kind}" for kind, n in sorted(found.items(), key=lambda kv: -kv[1])) or "0"


def append(record: Path, rows: list[dict]) -> None:
    """Add ``rows``; a file written with fewer columns is rewritten with the current ones first."""
    record.parent.mkdir(parents=True, exist_ok=True)
    old = []
    if record.exists():
        with open(record, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != COLUMNS:
                old = list(reader)
    mode = "w" if old or not record.exists() else "a"
    with open(record, mode, newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        if mode == "w":
            writer.writeheader()
            writer.writerows(old)
        writer.writerows(rows)
    for row in rows:
        print(json.dumps(row))


def _row(tag, launches, strategies, recoveries, workers, cases, findings, reproduced, rates, cpu_rate, load_start,
         plan, jobs, recorded, momentum=0.0, refused="") -> dict:
    return {"date": datetime.date.today().isoformat(), "tag": tag, "launches": launches,
            "strategies": strategies.replace(",", " "), "recoveries": recoveries.replace(",", " "),
            "workers": workers, "cases": cases, "findings": findings, "reproduced_on_mpi": reproduced,
            "cases_per_hour": round(statistics.median(rates)) if rates else "",
            "cases_per_hour_low": round(min(rates)) if rates else "",
            "cases_per_hour_high": round(max(rates)) if rates else "", "cases_per_cpu_hour": cpu_rate,
            "load_avg_start": round(load_start, 1), "load_avg_end": round(os.getloadavg()[0], 1),
            "plan_cases": plan, "jobs": jobs, "cases_recorded": recorded, "momentum": f"{momentum:g}",
            "refused": refused}


def rate(a) -> list[dict]:
    load_start = os.getloadavg()[0]
    runs = []
    with tempfile.TemporaryDirectory(prefix="sim-exhaustive-") as tmp:
        for i in range(a.launches):
            out = Path(tmp) / f"launch{i}"
            runs.append(one_launch(sweep_argv(a.workers, STRATEGIES, "shrink,respawn", out, a.minutes, a.jobs,
                                              False), out))
    cases = sum(s["cases"] for s, _ in runs)
    cpu_s = sum(c for _, c in runs)
    return [_row("simulated (rate measured)", a.launches, STRATEGIES, "shrink,respawn", a.workers, cases,
                 sum(s["findings"] for s, _ in runs), sum(s["on_mpi"].get("reproduced on MPI", 0) for s, _ in runs),
                 [s["cases_per_hour"] for s, _ in runs], round(cases / cpu_s * 3600) if cpu_s else "", load_start,
                 plan_cases(a.workers), a.jobs, "")]


def _block(text: str) -> tuple[str, str, str]:
    try:
        p, strategy, recovery = text.split(":")
        int(p)
    except ValueError:
        raise SystemExit(f"--block takes P:STRATEGY:RECOVERY, got {text!r}") from None
    return p, strategy, recovery


def chunk(a) -> None:
    """Each named block, resumed, within the chunk's --minutes in all; a block already complete is skipped."""
    end = time.monotonic() + a.minutes * 60
    for p, strategy, recovery in map(_block, a.block):
        out = a.keep / (f"n{p}-{strategy}-{recovery}" + (f"-m{a.momentum:g}" if a.momentum else ""))
        plan = plan_cases(p, strategy, recovery, a.momentum)
        resume = (out / "sweep.csv").exists()
        if resume and json.loads((out / "sweep.json").read_text()).get("cases") == plan:
            continue
        left_min = (end - time.monotonic()) / 60
        if left_min < 0.5:
            break
        load_start = os.getloadavg()[0]
        summary, cpu_s = one_launch(sweep_argv(p, strategy, recovery, out, left_min, a.jobs, resume, a.momentum), out)
        launch_cases, launch_s = summary["launch_cases"], summary["cases_wall_s"]
        row = _row("simulated (plan run in chunks)", 1, strategy, recovery, p, launch_cases, summary["findings"],
                   summary["on_mpi"].get("reproduced on MPI", 0), [summary["cases_per_hour"]],
                   round(launch_cases / cpu_s * 3600) if cpu_s else "", load_start, plan, a.jobs, summary["cases"],
                   a.momentum, refused_text(p, strategy, recovery, a.momentum))
        append(a.blocks_record, [row])  # now: a chunk cut short keeps the rows of the blocks it ran
        new = not (a.keep / CHUNKS).exists()
        with open(a.keep / CHUNKS, "a", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(["block", "cases", "wall_s", "cpu_s", "jobs"])
            writer.writerow([out.name, launch_cases, launch_s, round(cpu_s, 3), a.jobs])


def summary(a) -> list[dict]:
    """One row for the blocks run to their end under --keep (the others are named on stderr)."""
    blocks, left = [], []
    for folder in sorted(p for p in a.keep.iterdir() if p.is_dir()):
        s = json.loads((folder / "sweep.json").read_text())
        p, strategy, recovery = s["workers"][0], s["strategies"][0], s["recoveries"][0]
        complete = s["cases"] == plan_cases(str(p), strategy, recovery, s.get("momentum", 0.0))
        (blocks if complete else left).append((folder.name, s))
    for name, s in left:
        print(f"not complete: {name}: {s['cases']} case(s) recorded", file=sys.stderr)
    with open(a.keep / CHUNKS, newline="") as f:
        chunks = [r for r in csv.DictReader(f) if r["block"] in {n for n, _ in blocks}]
    rates = [int(r["cases"]) / float(r["wall_s"]) * 3600 for r in chunks if float(r["wall_s"]) > 0]
    cpu_s = sum(float(r["cpu_s"]) for r in chunks)
    cases = sum(s["cases"] for _, s in blocks)
    names = sorted(n for n, _ in blocks)
    return [_row("simulated (plan run to the end)", len(chunks), " ".join(names), "", "", cases,
                 sum(s["findings"] for _, s in blocks),
                 sum(s["on_mpi"].get("reproduced on MPI", 0) for _, s in blocks), rates,
                 round(cases / cpu_s * 3600) if cpu_s else "", os.getloadavg()[0], plan_cases("2,3,4"),
                 " ".join(sorted({r["jobs"] for r in chunks})), cases)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--launches", type=int, default=1)
    ap.add_argument("--workers", default="2,3,4")
    ap.add_argument("--jobs", type=int, default=1, help="the sweep's --jobs (cases run at the same time)")
    ap.add_argument("--block", nargs="+", metavar="P:STRATEGY:RECOVERY", help="run (resume) these blocks")
    ap.add_argument("--momentum", type=float, default=0.0,
                    help="with --block: every case with optimizer state (the refused schedules left out)")
    ap.add_argument("--keep", type=Path, help="with --block or --summary: the folder holding the blocks' records")
    ap.add_argument("--summary", action="store_true", help="one row for the blocks complete under --keep")
    ap.add_argument("--record", type=Path, default=Path("lab/data/sim-exhaustive.csv"))
    ap.add_argument("--blocks-record", type=Path, default=Path("lab/data/sim-exhaustive-blocks.csv"),
                    help="with --block: where each block's row goes")
    a = ap.parse_args()
    if (a.block or a.summary) and a.keep is None:
        ap.error("--block and --summary need --keep")
    if a.block:
        a.keep.mkdir(parents=True, exist_ok=True)
    if a.block:
        chunk(a)
    else:
        append(a.record, summary(a) if a.summary else rate(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
