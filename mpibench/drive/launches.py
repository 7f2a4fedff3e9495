"""``bench --launches N``: the same ``bench`` job launched N times, then combined.

A launch is the unit of repetition (on a shared host whole launches land in
states several-fold apart), so this driver, outside MPI, starts ``bench`` under
the launcher ``N`` times, each into its own folder ``OUT/launch-NN`` (its
``bench.csv``, ``fingerprint.csv``, ``comparison.csv``, stdout and stderr), prints
one progress line per launch with the time left, and writes ``OUT/bench.csv``
(bench.csv's columns, every figure the median over launches, then the intervals
and verdicts of :mod:`mpibench.results.launchtable`) and ``OUT/launches.csv``
(one row per launch: its exit status, its fingerprint and its state). A launch
that fails keeps its folder and the others still run; a launch refused as bad
usage (exit 2) stops the driver at once. This process never imports mpi4py.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mpibench.base.exits import EXIT_COULD_NOT_RUN, EXIT_OK, EXIT_USAGE, EXIT_VIOLATION
from mpibench.base.mpi_settings import mpi_settings

from .launch import mpibench_command, mpibench_command_text, run_job_again_if_unstarted

LAUNCH_DEADLINE_S = 3600.0
SUBFOLDER = "launch-{:02d}"
LAUNCH_FOLDER = re.compile(r"launch-\d{2,}")
FOLDED = ("--launches", "--np", "--out", "--launch-deadline")  # the driver's own options, with a value
FLAGS = ("--force",)


@dataclass
class LaunchDone:
    number: int
    folder: str
    exit: int | None  # None: killed at the deadline
    wall_s: float
    load_before: float


def job_args(argv: list[str]) -> list[str]:
    """``bench``'s arguments for one launch: the driver's own options taken out."""
    out, skip = [], False
    for word in argv:
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in FOLDED:
            skip = "=" not in word
            continue
        if word in FLAGS:
            continue
        out.append(word)
    return out


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def _progress(done: LaunchDone, total: int, started_s: float) -> str:
    elapsed = time.perf_counter() - started_s
    left_s = elapsed / done.number * (total - done.number)
    state = "killed at the deadline" if done.exit is None else f"exit {done.exit}"
    return (f"bench --launches: launch {done.number}/{total} {state} in {done.wall_s:.0f} s "
            f"(load {done.load_before:.2f}); ~{left_s / 60:.1f} min left")


def clear_launches(out: str) -> None:
    """Remove an earlier run's launch folders (``--force``: the earlier run's results are replaced)."""
    for name in os.listdir(out) if os.path.isdir(out) else []:
        if LAUNCH_FOLDER.fullmatch(name) and os.path.isdir(os.path.join(out, name)):
            shutil.rmtree(os.path.join(out, name))


def _remove_empty_run(out: str, folder: str) -> None:
    """The first launch's folder, and ``out`` when that leaves it empty (a fresh folder's
    ``latest`` link too, when it points there)."""
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.isdir(out) and not os.listdir(out):
        os.rmdir(out)
        latest = os.path.join(os.path.dirname(out), "latest")
        if os.path.islink(latest) and os.readlink(latest) == os.path.basename(out):
            os.unlink(latest)


def run_launches(launcher: list[str], ranks: int, launches: int, argv: list[str], out: str,
                 deadline_s: float = LAUNCH_DEADLINE_S, stream=sys.stdout) -> int:
    """Launch ``bench ARGV`` ``launches`` times into ``out``; write the combined tables; exit status."""
    args = ["bench", *job_args(argv)]
    first = mpibench_command_text(launcher, ranks, [*args, "--out", os.path.join(out, SUBFOLDER.format(1))])
    print(f"bench --launches {launches}: {ranks} ranks per launch, folders {out}/launch-NN; the first:\n"
          f"  {first}", file=stream, flush=True)
    started, done = time.perf_counter(), []
    for n in range(1, launches + 1):
        folder = os.path.join(out, SUBFOLDER.format(n))
        cmd = mpibench_command(launcher, ranks, [*args, "--out", folder])
        load = _load()
        job = run_job_again_if_unstarted(cmd, Path(folder), deadline_s,
                                             lambda f=folder: os.path.exists(os.path.join(f, "run.json")))
        done.append(LaunchDone(n, folder, None if job.hung else job.returncode, job.wall_s, load))
        print(_progress(done[-1], launches, started), file=stream, flush=True)
        if job.returncode == EXIT_USAGE:
            lines = [x for x in job.stdout_tail.splitlines() + job.stderr_tail.splitlines() if x.strip()]
            print(lines[-1] if lines else "bench: bad usage", file=sys.stderr, flush=True)
            if n == 1:  # refused before it measured anything: leave nothing behind
                _remove_empty_run(out, folder)
            return EXIT_USAGE
    return _finish(done, out, stream)


def _finish(done: list[LaunchDone], out: str, stream) -> int:
    kept = [d for d in done if d.exit in (EXIT_OK, EXIT_VIOLATION)]
    if any(os.path.exists(os.path.join(d.folder, "overlap.csv")) for d in kept):
        return _finish_overlap(done, kept, out, stream)
    return _finish_sizes(done, kept, out, stream)


def _finish_overlap(done: list[LaunchDone], kept: list[LaunchDone], out: str, stream) -> int:
    """``bench --profile``'s launches: one row per launch, the medians over them."""
    from mpibench.results.overlaptable import launch_medians, summary_lines

    table = launch_medians([d.folder for d in kept])
    table.to_csv(os.path.join(out, "overlap.csv"), index=False)
    for line in summary_lines(table):
        print(line, file=stream)
    print(f"# table: {os.path.join(out, 'overlap.csv')}", file=stream, flush=True)
    if len(kept) < len(done):
        print(f"bench --launches: {len(done) - len(kept)} launch(es) did not finish (see their folders)",
              file=sys.stderr, flush=True)
        return EXIT_COULD_NOT_RUN
    return EXIT_VIOLATION if len(table) and table.errors.sum() else EXIT_OK


def _finish_sizes(done: list[LaunchDone], kept: list[LaunchDone], out: str, stream) -> int:
    import pandas as pd

    from mpibench.base.records import BENCH_COLUMNS
    from mpibench.results.launchtable import (LAUNCH_COLUMNS, combine, model_lines, read_launches, states,
                                              verdict_lines)

    rows, prints = read_launches([d.folder for d in kept])
    state_of = states(prints) if len(prints) else {}
    table = combine(rows, state_of, BENCH_COLUMNS)
    table.to_csv(os.path.join(out, "bench.csv"), index=False)
    fp = {int(r.launch): r for r in prints.itertuples(index=False)} if len(prints) else {}
    launch_rows, settings = [], " ".join(mpi_settings())  # every launch inherits this driver's environment
    for i, d in enumerate(kept, start=1):
        r = fp.get(i)
        launch_rows.append([d.number, os.path.basename(d.folder), d.exit, round(d.wall_s, 1), d.load_before,
                            getattr(r, "pingpong_1mib_s", None), getattr(r, "memcpy_gbps", None),
                            getattr(r, "add_gbps", None), state_of.get(i, "unknown"), settings])
    launch_rows += [[d.number, os.path.basename(d.folder), d.exit, round(d.wall_s, 1), d.load_before,
                     None, None, None, "failed", settings] for d in done if d not in kept]
    pd.DataFrame(sorted(launch_rows), columns=LAUNCH_COLUMNS).to_csv(os.path.join(out, "launches.csv"), index=False)
    print(f"# {len(kept)} of {len(done)} launches finished; medians over them, 95 % order-statistic "
          f"intervals (below six launches none reaches 95 %); {_states_text(state_of)}", file=stream)
    for line in verdict_lines(table) + model_lines(table):
        print(line, file=stream)
    print(f"# tables: {os.path.join(out, 'bench.csv')}, {os.path.join(out, 'launches.csv')}", file=stream,
          flush=True)
    if len(kept) < len(done):
        print(f"bench --launches: {len(done) - len(kept)} launch(es) did not finish (see their folders)",
              file=sys.stderr, flush=True)
        return EXIT_COULD_NOT_RUN
    wrong = table.errors.fillna(0).sum() if "errors" in table else 0
    return EXIT_VIOLATION if wrong else EXIT_OK


def _states_text(state_of: dict[int, str]) -> str:
    """``launch states (1 MiB ping-pong): fast 1 4 6, slow 2 3 5`` or ``one launch state``."""
    names = sorted(set(state_of.values()))
    if names in ([], ["one"]):
        return "the fingerprints form one launch state"
    return "launch states (1 MiB ping-pong): " + ", ".join(
        f"{name} {' '.join(str(n) for n, s in sorted(state_of.items()) if s == name)}" for name in names)
