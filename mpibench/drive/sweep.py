"""The randomized fault sweep: many seeded schedules, many cases per MPI job.

The plan is every (seed, workers, strategy) triple; the schedule of a case is
``random_schedule(seed, workers, steps)`` and its recovery policy alternates
with the seed, so both policies meet every worker count. Cases of one worker
count run in batches (:mod:`mpibench.drive.batching`), ``--jobs`` launches at
a time; every finding from a batch is run again alone before it is reported
(:mod:`mpibench.drive.alone`). ``sweep.csv`` is rewritten in plan order after every finished
case, so an interrupted sweep keeps what it has; a job that crashes, hangs
past its deadline or exits with an unexpected status is a finding with its
stderr tail in ``findings.csv``, never a dropped row; ``sweep.json`` holds the
plan, the rate and the fault counts. After the plan, each violating case is
shrunk (:mod:`mpibench.drive.minimise`) and its minimal replay command is printed
beside the original.
"""
from __future__ import annotations

import itertools
import shlex
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import click

from .alone import BATCH_ONLY, rerun_alone
from .batching import BatchQueue, case_folder, remove_unreached, run_batch, run_queue
from .cases import VIOLATION, Case, Outcome, is_finding, run_case, stderr_gist
from .launch import launcher_argv, stop_on_sigterm
from .minimise import Candidate, shrink
from .progress import Progress
from .tally import summary_text, sweep_status, tally
from mpibench.base.records import SWEEP_COLUMNS, CsvLog
from mpibench.base.parsing import parse_list

RECOVERIES = ("shrink", "respawn")
SWEEP_EXTRA_COLUMNS = ["outcome", "minimal_replay", "alone", "batch_replay", "case_time_s"]
FINDING_COLUMNS = ["case", "outcome", "first_violation", "exit_status", "alone", "stderr_tail", "replay",
                   "batch_replay"]


@dataclass(frozen=True)
class SweepPlan:
    seeds: int | None  # None: endless (a sweep with a time budget)
    workers: tuple[int, ...]
    strategies: tuple[str, ...]
    steps: int
    first_seed: int = 0
    extra: tuple[str, ...] = ()  # further ``run`` options for every case
    swarm: bool = False  # each case draws strategy, recovery and knobs from its seed

    def cases(self) -> list[Case]:
        if self.seeds is None:
            raise ValueError("an endless plan has no list of cases; use stream()")
        return list(self.stream())

    def stream(self) -> Iterator[Case]:
        """The cases in plan order: seed-major, then workers, then strategy."""
        seeds = itertools.count(self.first_seed) if self.seeds is None else \
            range(self.first_seed, self.first_seed + self.seeds)
        for seed in seeds:
            yield from self.cases_of(seed)

    def cases_of(self, seed: int) -> list[Case]:
        from mpibench.faults import random_schedule

        from mpibench.job.swarm import draw_knobs

        plan = []
        for workers in self.workers:
            schedule = random_schedule(seed, workers, self.steps)
            if self.swarm:
                k = draw_knobs(seed, workers, self.strategies)
                plan.append(Case(f"s{seed}-n{workers}-{k.strategy}-{k.recovery}", seed, workers, k.strategy,
                                 k.recovery, self.steps, schedule, k.run_options() + self.extra))
                continue
            for strategy in self.strategies:
                plan.append(Case(f"s{seed}-n{workers}-{strategy}", seed, workers, strategy,
                                 RECOVERIES[seed % 2], self.steps, schedule, self.extra))
        return plan


@dataclass
class SweepSettings:
    out: Path
    mpiexec: list[str]
    jobs: int = 1
    case_deadline_s: float = 180.0
    shrink_runs: int = 30
    cases_per_launch: int = 1  # 1: one ``run`` job per case; more: batches (mpibench.drive.batching)
    time_budget_s: float | None = None  # stop handing out batches after this long

    def __post_init__(self):
        self.out = Path(self.out).absolute()  # every printed command runs from any directory


# ---------------------------------------------------------------------------- running
def run_sweep(cases: Iterable[Case], settings: SweepSettings, stream=None, total: int | None = None) -> list[Outcome]:
    """Run ``cases`` (plan order; endless with a time budget); write sweep.csv and
    findings.csv as cases finish; shrink the violating ones."""
    stream = stream or sys.stderr
    settings.out.mkdir(parents=True, exist_ok=True)
    if total is None and isinstance(cases, list):
        total = len(cases)
    progress = Progress(total, stream, budget_s=settings.time_budget_s)
    until = None if settings.time_budget_s is None else time.monotonic() + settings.time_budget_s
    queue = BatchQueue(cases, settings.cases_per_launch, until)
    done: dict[str, Outcome] = {}
    lock = threading.Lock()

    def record(outcomes: list[Outcome]) -> None:
        with lock:
            for outcome in outcomes:
                done[outcome.case.case_id] = outcome
                progress.advance(is_finding(outcome.outcome))
            write_tables(in_plan_order(done, queue), settings.out)

    def run(batch):
        return run_batch(batch, settings.out, settings.mpiexec, settings.case_deadline_s)

    try:
        run_queue(queue, settings.jobs, run, record)
    finally:  # stopped early (budget, interrupt): a case never begun leaves no folder behind
        remove_unreached(settings.out, set(done))
    progress.finish()
    outcomes = in_plan_order(done, queue)
    for outcome in outcomes:
        if is_finding(outcome.outcome) and outcome.batch_replay:
            rerun_alone(outcome, settings.mpiexec, settings.case_deadline_s)
            stream.write(f"{outcome.case.case_id}: {outcome.outcome} in its batch, run again alone: "
                         f"{outcome.alone}\n")
            write_tables(outcomes, settings.out)
    for outcome in outcomes:
        if outcome.outcome == VIOLATION and settings.shrink_runs > 0 \
                and not outcome.alone.startswith(BATCH_ONLY):
            minimise_case(outcome, settings, stream)
    write_tables(outcomes, settings.out)
    return outcomes


def in_plan_order(done: dict[str, Outcome], queue: BatchQueue) -> list[Outcome]:
    return sorted(done.values(), key=lambda o: queue.order[o.case.case_id])


def write_tables(outcomes: list[Outcome], out: Path) -> None:
    sweep = CsvLog(str(out / "sweep.csv"), SWEEP_COLUMNS + SWEEP_EXTRA_COLUMNS)
    findings = CsvLog(str(out / "findings.csv"), FINDING_COLUMNS)
    for o in outcomes:
        sweep.write(o.row())
        if is_finding(o.outcome):
            findings.write({"case": o.case.case_id, "outcome": o.outcome,
                            "first_violation": o.first_violation,
                            "exit_status": "" if o.job.hung else o.job.returncode, "alone": o.alone,
                            "batch_replay": o.batch_replay if o.alone.startswith(BATCH_ONLY) else "",
                            "stderr_tail": stderr_gist(o.job.stderr_tail) + "\n...\n" + o.job.stderr_tail[-600:],
                            "replay": o.replay})
    sweep.close()
    findings.close()


# ---------------------------------------------------------------------------- shrinking
def minimise_case(outcome: Outcome, settings: SweepSettings, stream) -> None:
    """Shrink a violating case's schedule; record and print the minimal replay command."""
    case = outcome.case
    folder = case_folder(settings.out, case) / "shrink"
    attempts = iter(range(1_000_000))
    steps_seen: dict[tuple, int] = {}

    def still_fails(cand: Candidate) -> bool:
        trial = replace(case, case_id=f"{case.case_id}-t{next(attempts)}", workers=cand.workers,
                        steps=cand.steps, schedule=cand.schedule)
        result = run_case(trial, folder / trial.case_id, settings.mpiexec, settings.case_deadline_s)
        if result.outcome == VIOLATION and result.first_invariant == outcome.first_invariant:
            steps_seen[key(cand)] = int(result.first_violation.split()[0])
            return True
        return False

    def key(cand: Candidate) -> tuple:
        return (cand.workers, cand.steps, cand.schedule.events)

    start = Candidate(case.workers, case.steps, case.schedule)
    steps_seen[key(start)] = int(outcome.first_violation.split()[0])
    result = shrink(start, still_fails, settings.shrink_runs, lambda c: steps_seen.get(key(c)))
    m = result.minimal
    minimal = replace(case, case_id=f"{case.case_id}-minimal", workers=m.workers, steps=m.steps,
                      schedule=m.schedule)
    mfolder = case_folder(settings.out, case) / "minimal"
    from .cases import replay_command, write_case

    write_case(minimal, mfolder)
    outcome.minimal = replay_command(settings.mpiexec, minimal, mfolder)
    note = " (run budget spent)" if result.exhausted else ""
    stream.write(f"\n{case.case_id}: {outcome.first_violation} after {result.runs} shrinking runs{note}\n"
                 f"  original: {outcome.replay}\n  minimal:  {outcome.minimal}\n")


# ---------------------------------------------------------------------------- summary
def write_sweep_json(out: Path, plan: SweepPlan, settings: SweepSettings, outcomes: list[Outcome],
                     wall_s: float) -> None:
    """What the sweep was and how it went, beside sweep.csv."""
    import json
    import os
    import platform

    from mpibench.base.records import SCHEMA_VERSION
    from mpibench.base.runinfo import package_versions

    info = {"schema_version": SCHEMA_VERSION, "seeds": plan.seeds, "first_seed": plan.first_seed,
            "workers": list(plan.workers), "strategies": list(plan.strategies), "steps": plan.steps,
            "extra_run_options": list(plan.extra), "launcher": settings.mpiexec, "jobs": settings.jobs,
            "case_deadline_s": settings.case_deadline_s, "shrink_runs": settings.shrink_runs,
            "swarm": plan.swarm, "cases_per_launch": settings.cases_per_launch,
            "time_budget_s": settings.time_budget_s, "cases": len(outcomes), "wall_s": round(wall_s, 1),
            "cases_per_minute": round(len(outcomes) / (wall_s / 60), 2) if wall_s > 0 else None,
            **tally(outcomes), "cores": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "packages": package_versions()}
    (out / "sweep.json").write_text(json.dumps(info, indent=2, default=str) + "\n")


def sweep_command(seeds: int, workers: str, strategies: str | None, steps: int, jobs: int, out: str,
                  mpiexec: str | None, first_seed: int, case_deadline: float, shrink_runs: int,
                  extra: tuple[str, ...] = (), swarm: bool = False, cases_per_launch: int = 1,
                  time_budget_min: float | None = None) -> int:
    """The ``sweep`` command body; the exit status (0 only when every case was ok).

    ``strategies`` None: every checked strategy, or with ``swarm`` every registered strategy.
    ``time_budget_min``: draw seeds from ``first_seed`` on until the budget is spent
    (``seeds`` is then ignored).
    """
    from mpibench.base.config import UsageError
    from mpibench.job.swarm import registered_strategies
    from mpibench.sync import registry

    worker_counts = parse_list(workers, "--workers", int)
    names = registry.validate(parse_list(strategies or (",".join(registered_strategies()) if swarm
                                                       else ",".join(registry.CHECKED)), "--strategies"))
    if seeds < 1 or steps < 1 or jobs < 1 or min(worker_counts) < 1 or cases_per_launch < 1:
        raise UsageError("--seeds, --steps, --jobs, --workers and --cases-per-launch must be positive")
    if time_budget_min is not None and not 0 < time_budget_min < float("inf"):
        raise UsageError(f"--time-budget must be a positive number of minutes, got {time_budget_min}")
    argv = launcher_argv(mpiexec)
    if not argv:
        raise UsageError("--mpiexec is empty")
    if not any(a.startswith("--with-ft") for a in argv):
        click.echo("note: the launcher has no '--with-ft ulfm'; under Open MPI a killed rank then "
                   "ends the whole job, and each such case is a crash finding", err=True)
    budget_s = None if time_budget_min is None else time_budget_min * 60
    plan = SweepPlan(None if budget_s else seeds, worker_counts, names, steps, first_seed, extra, swarm)
    settings = SweepSettings(Path(out), argv, jobs, case_deadline, shrink_runs, cases_per_launch, budget_s)
    per_seed = len(worker_counts) * (1 if swarm else len(names))
    size = f"for {time_budget_min:g} min" if budget_s else f"{seeds} seeds: {seeds * per_seed} cases"
    click.echo(f"sweep{' (swarm)' if swarm else ''}: workers {','.join(map(str, worker_counts))} x "
               f"{','.join(names)}, {size}, {jobs} launch(es) at a time, up to {cases_per_launch} cases "
               f"per launch; launcher: {shlex.join(argv)}", err=True)
    start = time.perf_counter()
    stop_on_sigterm()
    outcomes = run_sweep(plan.stream() if budget_s else plan.cases(), settings)
    wall_s = time.perf_counter() - start
    write_sweep_json(settings.out, plan, settings, outcomes, wall_s)
    click.echo(summary_text(outcomes, wall_s))
    click.echo(f"sweep.csv, findings.csv and sweep.json in {out}")
    return sweep_status(outcomes)


__all__ = ["SweepPlan", "SweepSettings", "run_sweep", "sweep_command"]
