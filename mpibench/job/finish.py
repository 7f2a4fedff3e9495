"""The job's own measurements around its runs: calibrate first, measure and report last.

``start`` runs before the scenarios (so the calibration sees a quiet job);
``finish`` runs after them and the benchmarks: it measures scaling, adds the
model's rows beside every measured figure, compares the two and writes
``scaling.csv``, ``comparison.csv``, the modelled rows of ``bench.csv`` and
the calibration in ``run.json``. ``write_page`` builds ``report.html`` once the
folder is judged (verdict.json written). Only rank 0 writes.
"""
from __future__ import annotations

import csv
import os
import shlex
import sys

import pandas as pd
from mpi4py import MPI

from mpibench.results.calibration import Calibration
from mpibench.results.compare import (compare_collectives, compare_steps, comparison_frame, modelled_bench_rows,
                                      run_load)
from mpibench.results.report import build, read_csv
from mpibench.sync.registry import options_of

from . import scaling as scaling_mod
from .calibrate import calibrate
from .runner import run_scenario
from .scaling import SCALING_COLUMNS, ScalingPlan


def start(world: MPI.Comm, base, plan: ScalingPlan = ScalingPlan(), strategies=None) -> Calibration:
    """Calibrate (every rank calls; every rank gets the same figures). The one-rank step is
    measured under each of ``strategies`` (default: the run's own) at every local batch the
    scaling points use; each scaling point measures its own again right before it runs
    (:func:`.scaling.one_rank_beside`), and the model uses that one."""
    from .scaling import rank_counts

    batches = [plan.local_batch(mode, p) for mode in ("strong", "weak") for p in rank_counts(world.Get_size())]
    return calibrate(world, run_scenario, plan.config(base, base.strategy, plan.weak_batch), batches,
                     [base.strategy] if strategies is None else strategies)


def append_rows(path: str, rows: list[dict]) -> None:
    """Append rows under the file's existing header (columns it lacks are dropped)."""
    if not rows:
        return
    with open(path, newline="") as fh:
        header = next(csv.reader(fh), None)
    with open(path, "a", newline="") as fh:
        writer = csv.writer(fh)
        for row in rows:
            writer.writerow(["" if row.get(c) is None else row.get(c) for c in header])


def model_bench(out_dir: str, cal: Calibration, options: dict) -> int:
    """Add a modelled row to bench.csv for each measured one; returns how many."""
    bench = read_csv(out_dir, "bench.csv")
    rows = modelled_bench_rows(cal, bench, options)
    append_rows(os.path.join(out_dir, "bench.csv"), rows)
    return len(rows)


def finish(world: MPI.Comm, out_dir: str, base, cal: Calibration, backend, strategies,
           progress=None, plan: ScalingPlan | None = None) -> None:
    """Scaling, modelled rows, comparison and report (every rank calls).

    Without a plan, the default one runs between 8 and 12 steps per point,
    following ``--steps``, and a run of fewer steps than that measures each point
    once instead of in three rounds, so a quick run stays quick."""
    from dataclasses import replace

    from mpibench.base import runinfo

    quick = base.steps < ScalingPlan.steps
    plan = plan or replace(ScalingPlan(), steps=min(ScalingPlan.steps, max(8, base.steps)),
                           rounds=1 if quick else ScalingPlan.rounds)

    measured = scaling_mod.measure(world, run_scenario, base, strategies, backend, plan, progress)
    if world.Get_rank() != 0:
        return
    options = options_of(base)
    rows = measured + scaling_mod.modelled(cal, measured, options)
    pd.DataFrame(rows, columns=SCALING_COLUMNS).to_csv(os.path.join(out_dir, "scaling.csv"), index=False)
    model_bench(out_dir, cal, options)
    bench = read_csv(out_dir, "bench.csv")
    scaling = pd.DataFrame(rows)
    comparison = comparison_frame(compare_steps(cal, scaling, options)
                                  + compare_collectives(cal, bench, options, run_load(cal, scaling)))
    comparison.to_csv(os.path.join(out_dir, "comparison.csv"), index=False)
    runinfo.update(out_dir, {"calibration": cal.as_dict(), "model_options": options,
                             "scaling_plan": plan.__dict__})


def write_page(out_dir: str) -> str | None:
    """report.html from the judged folder (rank 0, after verdict.json); says where it is.

    Returns its path, or None when it could not be built (the verdict stands: the page is
    a view of the folder, rebuilt offline with the printed command)."""
    try:
        path = os.path.abspath(build(out_dir))
    except Exception as exc:  # noqa: BLE001 - a report bug must not cost the run its verdict
        print(f"mpibench: report.html not built ({type(exc).__name__}: {exc}); rebuild it with: "
              f"{shlex.join([sys.executable, '-m', 'mpibench', 'report', os.path.abspath(out_dir)])}",
              file=sys.stderr, flush=True)
        return None
    print(f"report: {path}", flush=True)
    return path
