"""The main job's step, measured against modelled, part by part, over repeated runs.

    python lab/studies/step_model.py DIR [DIR ...] [--max-ranks 2]
    python lab/studies/step_model.py --launches 6 --out DIR [--ranks 2] [--job NAME --write]

Each DIR is a main job's output folder (``make run NP=2``). Printed per folder
and then as the median over the folders: for every scaling point at p up to
``--max-ranks`` (every strategy, both scaling modes), the step time and each of
its parts (compute, reduction, commit, evidence, check, wait for the last
rank) as measured/modelled milliseconds with the model's error, the other
load on the host while it ran (cores), and whether the step is within its
tolerance (15 % at p = 1, 25 % above); a miss names the part whose measured
and modelled times lie furthest apart. Exit 0 when every median point is
within, 1 when one is not, 2 when a folder has no usable scaling.csv, 3 when
the folders hold no point.

Each folder is one launch, so the closing table judges every point over the
launches: measured / modelled step per folder (each folder's model calibrated in
that launch), its 95 % order-statistic interval over the folders, and the call
(:func:`mpibench.results.launchstats.model_call`): flagged only where the
interval excludes the tolerance band, ``agrees`` where it lies inside,
otherwise "cannot resolve at this noise (±X %)"; with too few launches for the
interval to reach 95 % coverage, "too few launches".

``--launches N --out DIR`` first launches the main job N times at ``--ranks`` into
``DIR/launch-K`` (its fault-free scenario only and no sweep: ``MPIBENCH_SCENARIOS=none``,
``MPIBENCH_NO_SWEEP=1``; calibration, benchmarks and scaling as always), one launch
after the other, and judges those folders. ``--write`` with ``--job NAME`` puts this job's
calls into ``lab/data/model_calls.csv`` (rows of the same job replaced) and rebuilds
``lab/data/model_calls_agreement.csv``: per point, every job's call and whether they
all make the same one. Run it as a timing measurement, one job per command.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from mpibench.results import stepcompare  # noqa: E402

CALLS_CSV = ROOT / "lab" / "data" / "model_calls.csv"
AGREEMENT_CSV = ROOT / "lab" / "data" / "model_calls_agreement.csv"
FIRST_GROUP = "before-yield"  # jobs written before a wait yielded its core (mpibench/sync/comm.py)
LAUNCH_TIMEOUT_S = 300


def launch_calls(calls: list) -> list[str]:
    """Per point: measured / modelled step over the folders (launches), its interval and the call."""
    lines = [f"{'strategy':<12} {'mode':<8} {'p':>2} {'launches':>8} {'measured/modelled':>18} {'95 % interval':>15}"
             f" {'band':>13}  call"]
    for c in calls:
        got = c.ratio
        lines.append(f"{c.strategy:<12} {c.mode:<8} {c.ranks:>2} {got.n:>8} {got.median:18.2f} "
                     f"{f'[{got.low:.2f}, {got.high:.2f}]':>15} {f'[{c.band_low:.2f}, {c.band_high:.2f}]':>13}  "
                     f"{c.call} ({got.coverage:.1%} coverage)")
    return lines


class LaunchFailed(RuntimeError):
    """A launch of the main job that did not finish (exit 3: could not run)."""


def load() -> float:
    return os.getloadavg()[0]


def run_launches(n: int, ranks: int, out: Path) -> tuple[list[str], list[float]]:
    """``n`` main jobs at ``ranks`` into ``out/launch-K``, one after the other; (folders, the
    1-minute load before the first and after each)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from mpirun import run_mpi

    os.environ.update(MPIBENCH_SCENARIOS="none", MPIBENCH_NO_SWEEP="1")
    folders, loads = [], [load()]
    for k in range(n):
        folder = out / f"launch-{k + 1}"
        job = run_mpi(ranks, ["--force"], folder, timeout=LAUNCH_TIMEOUT_S)
        loads.append(load())
        if job.returncode not in (0, 4):
            raise LaunchFailed(f"step_model: could not run: launch {k + 1} exited {job.returncode}:\n"
                               f"{job.text[-2000:]}")
        print(f"launch {k + 1}/{n}: {folder} (load {loads[-1]:.2f})", flush=True)
        folders.append(str(folder))
    return folders, loads


def write_calls(job: str, calls: list, loads: list[float], ranks: int, group: str) -> None:
    """This job's rows in model_calls.csv (its earlier rows replaced), then the agreement table:
    over the jobs of ``group`` (jobs of one version of the code, run as one set), and of every
    earlier group below it. Rows written before groups existed are group ``before-yield``."""
    import pandas as pd

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    rows = pd.DataFrame([{"job": job, "strategy": c.strategy, "mode": c.mode, "ranks": c.ranks,
                          "launches": c.ratio.n, "measured_over_modelled": c.ratio.median,
                          "low": c.ratio.low, "high": c.ratio.high, "coverage_pct": round(c.ratio.coverage * 100, 1),
                          "band_low": c.band_low, "band_high": c.band_high, "call": c.call, "call_kind": c.kind,
                          "job_ranks": ranks, "host_cores": os.cpu_count(), "oversubscribed": ranks > (os.cpu_count() or 1),
                          "load_1m_range": f"{min(loads):.2f}-{max(loads):.2f}" if loads else "unknown",
                          "date_utc": date, "group": group} for c in calls])
    CALLS_CSV.parent.mkdir(parents=True, exist_ok=True)
    if CALLS_CSV.exists():
        old = pd.read_csv(CALLS_CSV, keep_default_na=False)
        if "group" not in old.columns:
            old["group"] = FIRST_GROUP
        rows = pd.concat([old[old.job.astype(str) != job], rows], ignore_index=True)
    rows.to_csv(CALLS_CSV, index=False, float_format="%.4g")
    tables = []
    for name in reversed(list(dict.fromkeys(rows.group.astype(str)))):  # the newest group first
        jobs = rows[rows.group.astype(str) == name]
        by_job = {j: list(g.itertuples(index=False)) for j, g in jobs.groupby("job", sort=False)}
        tables.append(pd.DataFrame(stepcompare.agreement(by_job)).assign(group=name))
    pd.concat(tables, ignore_index=True).to_csv(AGREEMENT_CSV, index=False)
    print(f"# wrote {CALLS_CSV} ({rows.job.nunique()} jobs) and {AGREEMENT_CSV}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", metavar="DIR")
    parser.add_argument("--max-ranks", type=int, default=2)
    parser.add_argument("--launches", type=int, default=0, help="launch the main job N times first (into --out)")
    parser.add_argument("--ranks", type=int, default=2, help="ranks of each launch [default: 2]")
    parser.add_argument("--out", type=Path, help="where the launches' folders go (with --launches)")
    parser.add_argument("--job", help="this job's name in lab/data/model_calls.csv (with --write)")
    parser.add_argument("--write", action="store_true", help="write this job's calls (needs --job)")
    parser.add_argument("--group", default="exchange", help="the set of jobs this one belongs to (one version of "
                        "the code); agreement is counted within each group [default: exchange]")
    args = parser.parse_args(argv)
    if args.launches and args.out is None or args.write and not args.job or not (args.folders or args.launches):
        print("step_model: give DIR..., or --launches N --out DIR; --write needs --job NAME", file=sys.stderr)
        return 2
    loads: list = []
    if args.launches:
        try:
            launched, loads = run_launches(args.launches, args.ranks, args.out)
        except LaunchFailed as exc:
            print(exc, file=sys.stderr)
            return 3
        args.folders = list(args.folders) + launched
    try:
        folders = [stepcompare.read_folder(d, args.max_ranks) for d in args.folders]
    except stepcompare.StepInputError as exc:
        print(f"step_model: {exc}", file=sys.stderr)
        return 2
    for f in folders:
        print(f"== {f.folder}: measured/modelled ms (model error)")
        print(stepcompare.table(f.points))
        print()
    points = stepcompare.median_points(folders)
    if not points:
        print("step_model: no scaling point at p <= {} in {} folder(s)".format(args.max_ranks, len(folders)))
        return 3
    print(f"== median over {len(folders)} folder(s): measured/modelled ms (model error)")
    print(stepcompare.table(points))
    print(stepcompare.summary_line(points))
    calls = stepcompare.point_calls(folders)
    print(f"\n== over {len(folders)} launch(es): measured / modelled step per launch, 95 % interval, the call")
    print("\n".join(launch_calls(calls)))
    if loads:
        print(f"load (1 min) over the launches: {min(loads):.2f}-{max(loads):.2f}")
    if args.write:
        write_calls(args.job, calls, loads, args.ranks, args.group)
    return 0 if all(p.holds for p in points) else 1


if __name__ == "__main__":
    sys.exit(main())
