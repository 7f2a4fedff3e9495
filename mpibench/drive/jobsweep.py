"""The main job's own short random sweep, run in its launch after the named scenarios.

The sweep is planned and judged with the sweep driver's code, but runs inside
the job's ``mpirun``: the command line hands :func:`plan_job_sweep` to the job
(:func:`mpibench.job.suite.main_job`), which calls it and later asks the
returned :class:`JobSweep` to judge its cases. So the job layer never imports
the drivers, and a replacement that joins late gets the judging code with the
continuation it is handed.

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
from typing import Callable

from mpibench.base.config import RunConfig, UsageError
from mpibench.base.launch_command import this_launch
from mpibench.job.swarm import registered_strategies

from .cases import OK, batch_case_job, judge, replay_command, write_case
from .launch import JobResult
from .sweep import SweepPlan, SweepSettings, summary_text, write_sweep_json, write_tables

# Reads a ``run`` argument list as ``run`` does: (config, --out).
RunArgsReader = Callable[[list[str]], tuple[RunConfig, str]]

NOT_ALONE = "not yet run alone (found inside the main job): its replay command runs it alone"
DEFAULT_BUDGET_S = 45.0
MAX_CASES = 36
STEPS = 6


@dataclass(frozen=True)
class JobSweep:
    plan: SweepPlan | None = None
    cases: tuple = ()
    configs: list = field(default_factory=list)
    outs: list = field(default_factory=list)
    budget_s: float = 0.0
    mpiexec: tuple[str, ...] = ()

    def judge(self, comm, out: str, results, until: float | None) -> int:
        """See :func:`judge_job_sweep`; the job calls this without importing the drivers."""
        return judge_job_sweep(self, comm, out, results, until)


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


def plan_job_sweep(base: RunConfig, world, out: str, read_run_args: RunArgsReader) -> JobSweep:
    """The sweep's cases on ``world`` (an MPI communicator; rank 0 writes their schedules);
    empty when it is turned off. ``read_run_args``: the command line's own reader of ``run``
    arguments, so that every case is configured exactly as its replay command would be."""
    seconds = budget_s()
    if seconds <= 0:
        return JobSweep()
    if base.overlap:  # the job's --overlap: its cases too, under the strategies that overlap
        from mpibench.sync.registry import overlapping

        plan = SweepPlan(MAX_CASES, (world.Get_size(),), overlapping(), STEPS, base.seed, ("--overlap",), swarm=True)
    else:
        plan = SweepPlan(MAX_CASES, (world.Get_size(),), registered_strategies(), STEPS, base.seed, swarm=True)
    cases = plan.cases()
    folders = [Path(out).absolute() / "sweep-cases" / c.case_id for c in cases]  # printed commands: any folder
    if world.Get_rank() == 0:
        for case, folder in zip(cases, folders):
            write_case(case, folder)
    world.Barrier()  # the schedules exist before anyone reads them
    parsed = [read_run_args(c.run_args(f / "schedule.toml", f / "run")) for c, f in zip(cases, folders)]
    return JobSweep(plan, tuple(cases), [p[0] for p in parsed], [p[1] for p in parsed], seconds,
                    tuple(this_launch().launcher))  # the launch this job runs under: its replays paste


def judge_job_sweep(sweep: JobSweep, comm, out: str, results, until: float | None) -> int:
    """Rank 0 judges the cases that ran and writes the sweep tables into ``out``; 1 if any
    was not ok. ``results``: the job's (config, code, own folder) per item run; ``until``:
    when the sweep budget ended."""
    if not sweep.cases or comm.Get_rank() != 0:
        return 0
    ran = {own for _, _, own in results if own is not None}
    outcomes = []
    for case, own in zip(sweep.cases, sweep.outs):
        if own in ran:
            run_dir = Path(own)
            status = batch_case_job(run_dir, JobResult(0, 0.0, 0.0, "", ""), last=False)
            outcomes.append(judge(case, run_dir, status, replay_command(list(sweep.mpiexec), case, run_dir.parent),
                                  in_batch=True))
    unrun = remove_unrun(sweep.outs, ran)
    for outcome in outcomes:  # a job cannot launch another mpirun from inside its own
        if outcome.outcome != OK:
            outcome.alone = NOT_ALONE
    wall_s = time.time() - (until - sweep.budget_s) if until is not None else 0.0
    folder = Path(out)
    settings = SweepSettings(folder, list(sweep.mpiexec), 1, 0.0, 0, len(sweep.cases), sweep.budget_s)
    write_tables(outcomes, folder)
    write_sweep_json(folder, sweep.plan, settings, outcomes, wall_s)
    print(f"sweep of {len(outcomes)} of {len(sweep.cases)} planned random cases "
          f"(budget {sweep.budget_s:g} s"
          + (f"; the {unrun} the budget left out are not kept" if unrun else "") + "):\n"
          + summary_text(outcomes, wall_s), flush=True)
    return 0 if all(o.outcome == OK for o in outcomes) else 1


def remove_unrun(outs: list[str], ran: set[str]) -> int:
    """Remove the folders of planned cases the budget never reached (they hold only the
    schedule the planner wrote: kept, they would look like cases whose results went missing).
    A case that began (its run folder exists) stays, whatever became of it."""
    import shutil

    removed = 0
    for own in outs:
        run_dir = Path(own)
        if own not in ran and not run_dir.exists() and run_dir.parent.is_dir():
            shutil.rmtree(run_dir.parent)
            removed += 1
    return removed
