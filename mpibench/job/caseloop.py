"""The loop shared by the main job and the ``batch`` job: a plan of items run one
after another in one launch, the world size restored before each.

An item runs either into the job's own folder (the main job's scenarios) or
into a folder of its own (sweep cases), which it then holds exactly as its
own ``run`` command would leave it: ``run.json``, the CSVs, ``history/``,
``verdict.json`` and ``invariants.csv`` from the checker, and
``case-status.json`` with the exit status that ``run`` would have had (from
the verdict: 0 pass, 1 fail or stuck, 3 could not judge; 2 for bad input).
Replacements spawned on the way carry a :mod:`mpibench.job.continuation` and
re-enter here.
"""
from __future__ import annotations

import json
import os
import time

from mpi4py import MPI

from mpibench.base.config import RunConfig, UsageError
from mpibench.base.exits import EXIT_USAGE, EXIT_VIOLATION
from mpibench.base.records import STATUS_FILE
from .continuation import BetweenScenarios, MainJobAt
from .phases import case_finished, progress_tag
from .runner import run_scenario_on


def run_plan(job, comm: MPI.Comm, first: int, records, backend, done=(), until=None):
    """Runs ``job.plan[first:]``; returns ``([(config, summary, own folder or None), ...],
    the communicator left at the end, the budget's end or None)``.

    An item from ``job.budgeted_from`` on runs only while rank 0's clock is before the
    budget's end (the decision is broadcast, so every member skips alike).
    """
    results = list(done)
    for index in range(first, len(job.plan)):
        if index in getattr(job, "skip", ()):  # the launch cannot run it: accounted for at the start
            continue
        comm = restore_world(comm, job.world_size, BetweenScenarios(job, index, tuple(results), until))
        if job.budgeted_from is not None and index >= job.budgeted_from:
            until = until if until is not None else time.time() + job.sweep_s  # rank 0's clock decides
            if not _within_budget(comm, until):
                continue
        config, own = job.plan[index], index < len(job.outs) and job.outs[index] is not None
        if own:
            comm = _launched_member_spared(comm, config)
        at = MainJobAt(job, index, tuple(results), until)
        _progress(comm, (f"case {_case_name(at.out)}" if own else f"scenario {config.scenario}")
                  + f" under {config.strategy} ... " + progress_tag(job, index, until, time.time()))
        summary, comm = (_run_case(config, comm, backend, at) if own else
                         run_scenario_on(config, comm, records, backend, continuation=at))
        if summary is not None:
            results.append((config, summary, at.out if own else None))
            if not own:  # the main job's own scenario: its phase record (a case folder has its verdict)
                case_finished(comm, job.out, index, config)
    if job.restore_at_end:
        comm = restore_world(comm, job.world_size, BetweenScenarios(job, len(job.plan), tuple(results), until))
    return results, comm, until


def _run_case(config: RunConfig, comm: MPI.Comm, backend, at: MainJobAt):
    """One item into its own folder; (None, comm) when its options are refused (exit 2)."""
    start = time.perf_counter()
    try:
        summary, comm = run_in_folder(config, comm, backend, at)
    except UsageError as exc:  # found alike on every rank before training: the case's run exits 2
        if comm.Get_rank() == 0:
            write_case_status(at.out, EXIT_USAGE, str(exc), time.perf_counter() - start)
        return None, comm
    finish_case(comm, config, summary, at.out, time.perf_counter() - start)
    return summary, comm


def run_in_folder(config: RunConfig, comm: MPI.Comm, backend, continuation, hosts=None) -> tuple:
    """One run that writes its own output folder (``continuation.out``) as ``run`` does:
    a single ``run``, and each case of a batch, so a batch case's folder is the one its
    replay command writes. ``hosts``: the folder was opened already (with every rank's host)."""
    from mpibench.engine.history import case_id
    from .runfolder import open_out, open_records, write_run_json

    out = continuation.out
    if hosts is None:
        out, hosts = open_out(comm, out)
    records = open_records(comm, out)
    write_run_json(out, config, comm, backend, {"cases": [case_id(continuation.case_index, config.scenario,
                                                                    config.strategy, config.recovery)]},
                    hosts=hosts)
    summary, comm = run_scenario_on(config, comm, records, backend, continuation=continuation)
    records.close()
    return summary, comm


def finish_case(comm: MPI.Comm, config: RunConfig, summary, out: str, wall_s: float) -> None:
    """The membership's first process judges the case's folder (verdict.json,
    invariants.csv) and writes its status file."""
    from .runfolder import verdict_status

    if comm.Get_rank() != 0:
        return
    code = verdict_status(out, [summary.case_verdict] if summary.case_verdict is not None else [], say=False)
    write_case_status(out, EXIT_VIOLATION if summary.error else code, summary.error, wall_s)


def write_case_status(out: str, exit_status: int, stuck: str | None, wall_s: float) -> None:
    """``case-status.json``: the exit status the case's own ``run`` command would have had."""
    path = os.path.join(out, STATUS_FILE)
    os.makedirs(out, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump({"exit_status": exit_status, "stuck": stuck, "wall_s": round(wall_s, 3)}, f)
    os.replace(path + ".tmp", path)


def restore_world(comm: MPI.Comm, n: int, between: BetweenScenarios) -> MPI.Comm:
    """Spawn replacements until ``comm`` has ``n`` ranks again (after shrinking scenarios)."""
    missing = n - comm.Get_size()
    if missing <= 0:
        return comm
    from mpibench.faults.respawn import spawn

    from .runner import free_comm

    _progress(comm, f"respawning {missing} rank(s) to restore the world size {n}")
    merged, _ = spawn(comm, missing, between)
    free_comm(comm)
    return merged


def _launched_member_spared(comm: MPI.Comm, config: RunConfig) -> MPI.Comm:
    """``comm`` ordered so that a process the launcher started survives the case's kills
    (:mod:`.launched`: ULFM cannot recover a world of spawned processes only)."""
    from mpibench.faults import load_schedule

    from .launched import keep_launched_member

    try:
        schedule = load_schedule(config.scenario, comm.Get_size(), config.seed)
    except ValueError:
        return comm  # the case's own run refuses it (exit 2)
    return keep_launched_member(comm, schedule)


def _within_budget(comm: MPI.Comm, until: float) -> bool:
    return comm.bcast(time.time() < until if comm.Get_rank() == 0 else None, root=0)


def _case_name(out: str) -> str:
    return os.path.basename(os.path.dirname(os.path.normpath(out)))


def _progress(comm: MPI.Comm, message: str) -> None:
    if comm.Get_rank() == 0:
        print(message, flush=True)
