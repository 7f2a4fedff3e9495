"""The main job's own short random sweep, run in its launch after the named scenarios.

Swarm cases (:mod:`mpibench.job.swarm`: random schedule, strategy, recovery and
knobs from the seed) at the job's world size go through the same loop as a
``batch`` job (:func:`mpibench.job.caseloop.run_plan`), each writing its own folder
under ``DIR/sweep-cases/``; they run while a time budget lasts, so the job's
length stays bounded on a slow machine. Afterwards the job's rank 0 judges
them as the ``sweep`` command does and writes ``sweep.csv``, ``findings.csv``
and ``sweep.json`` into DIR, with the replay command of every case.

``MPIBENCH_NO_SWEEP=1`` leaves the sweep out (tests of the scenarios);
``MPIBENCH_JOB_SWEEP_S`` sets its budget in seconds.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from mpi4py import MPI

from mpibench.base.config import RunConfig, UsageError

DEFAULT_BUDGET_S = 45.0
MAX_CASES = 36
STEPS = 6


@dataclass(frozen=True)
class JobSweep:
    plan: object = None  # mpibench.drive.sweep.SweepPlan
    cases: tuple = ()
    configs: list = field(default_factory=list)
    outs: list = field(default_factory=list)
    budget_s: float = 0.0
    mpiexec: tuple[str, ...] = ()


def budget_s() -> float:
    if os.environ.get("MPIBENCH_NO_SWEEP") == "1":
        return 0.0
    text = os.environ.get("MPIBENCH_JOB_SWEEP_S", "").strip()
    try:
        value = float(text) if text else DEFAULT_BUDGET_S
    except ValueError:
        raise UsageError(f"MPIBENCH_JOB_SWEEP_S must be a number of seconds, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise UsageError(f"MPIBENCH_JOB_SWEEP_S must be a non-negative number of seconds, got {text!r}")
    return value


def plan_job_sweep(base: RunConfig, world: MPI.Comm, out: str) -> JobSweep:
    """The sweep's cases (rank 0 writes their schedules); empty when it is turned off."""
    seconds = budget_s()
    if seconds <= 0:
        return JobSweep()
    from mpibench.drive.cases import write_case
    from mpibench.cli import parse_run_args
    from mpibench.drive.launch import launcher_argv
    from .swarm import registered_strategies
    from mpibench.drive.sweep import SweepPlan

    plan = SweepPlan(MAX_CASES, (world.Get_size(),), registered_strategies(), STEPS, base.seed, swarm=True)
    cases = plan.cases()
    folders = [Path(out) / "sweep-cases" / c.case_id for c in cases]
    if world.Get_rank() == 0:
        for case, folder in zip(cases, folders):
            write_case(case, folder)
    world.Barrier()  # the schedules exist before anyone reads them
    parsed = [parse_run_args(c.run_args(f / "schedule.toml", f / "run")) for c, f in zip(cases, folders)]
    return JobSweep(plan, tuple(cases), [p[0] for p in parsed], [p[1] for p in parsed], seconds,
                    tuple(launcher_argv()))


def finish_job_sweep(comm: MPI.Comm, job, results, until: float | None) -> int:
    """Rank 0 judges the cases that ran and writes the sweep tables; 1 if any was not ok.

    ``job``: the :class:`mpibench.job.continuation.MainJob`; ``until``: when its sweep budget ended.
    """
    sweep: JobSweep | None = job.sweep
    if not sweep or not sweep.cases or comm.Get_rank() != 0:
        return 0
    from mpibench.drive.cases import OK, batch_case_job, judge, replay_command
    from mpibench.drive.launch import JobResult
    from mpibench.drive.sweep import SweepSettings, summary_text, write_sweep_json, write_tables

    ran = {out for _, _, out in results if out is not None}
    outcomes = []
    for case, out in zip(sweep.cases, sweep.outs):
        if out in ran:
            run_dir = Path(out)
            status = batch_case_job(run_dir, JobResult(0, 0.0, 0.0, "", ""), last=False)
            outcomes.append(judge(case, run_dir, status, replay_command(list(sweep.mpiexec), case, run_dir.parent),
                                  in_batch=True))
    wall_s = time.time() - (until - sweep.budget_s) if until is not None else 0.0
    folder = Path(job.out)
    settings = SweepSettings(folder, list(sweep.mpiexec), 1, 0.0, 0, len(sweep.cases), sweep.budget_s)
    write_tables(outcomes, folder)
    write_sweep_json(folder, sweep.plan, settings, outcomes, wall_s)
    print(f"sweep of {len(outcomes)} of {len(sweep.cases)} planned random cases "
          f"(budget {sweep.budget_s:g} s):\n" + summary_text(outcomes, wall_s), flush=True)
    return 0 if all(o.outcome == OK for o in outcomes) else 1
