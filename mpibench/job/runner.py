"""Runs one scenario under one strategy on a communicator and agrees on the outcome."""
from __future__ import annotations

import os

from mpi4py import MPI

from mpibench.sync.comm import Comm
from mpibench.sync.registry import lookup
from mpibench.base.config import RunConfig, UsageError, replay_command
from mpibench.engine.data import make_dataset, make_shards
from mpibench.engine.history import History, NoHistory, case_id, schedule_data, write_case
from mpibench.base.records import RunRecords
from mpibench.engine.summary import Summary
from mpibench.engine.watchdog import StepWatchdog
from mpibench.engine.worker import Trainer

from .parts import parts_for


def recoverable_dup(world: MPI.Comm) -> MPI.Comm:
    """A private copy of ``world`` whose errors are returned, not fatal."""
    comm = world.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    return comm


def prepare(config: RunConfig, world_size: int):
    """Validate and load everything a run needs; UsageError on bad input."""
    from mpibench.faults import load_schedule

    from mpibench.sync import registry

    config.validate(world_size)
    registry.validate([config.strategy])
    if config.overlap:
        from mpibench.sync.overlap import refusal

        why = refusal(registry.lookup(config.strategy))
        if why:
            raise UsageError(why)
    try:
        schedule = load_schedule(config.scenario, world_size, config.seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if parts_for(config).refuse:  # optimizer state no survivor would hold: refused before any folder is made
        check_supported(scenario_config(config, schedule), schedule)
    return schedule


def scenario_config(config: RunConfig, schedule) -> RunConfig:
    """``config`` with the run options the scenario needs, where the user kept the default."""
    from dataclasses import replace

    default = RunConfig()
    changes = {k: v for k, v in schedule.options if getattr(config, k) == getattr(default, k)}
    return replace(config, **changes) if changes else config


def check_supported(config: RunConfig, schedule) -> None:
    """Refuse (exit 2) a run whose faults would need optimizer state no survivor holds."""
    from mpibench.engine.optimizer import check_supported as optimizer_check

    optimizer_check(config, schedule)


def _check_ulfm(schedule) -> None:
    from mpibench.base import runinfo

    if schedule.needs_ulfm() and not runinfo.ulfm_status()["active"]:
        raise UsageError(f"scenario {schedule.name!r} kills ranks but ULFM is not active: {runinfo.ulfm_hint()}")


def _field(continuation, name: str):
    """A field of the job's continuation (:mod:`mpibench.job.continuation`), or None."""
    return getattr(continuation, name, None)


def case_dir(config: RunConfig, continuation) -> str | None:
    """``OUT/history/CASE_ID`` of the case ``config`` runs as, or None when no history is kept."""
    out = _field(continuation, "out")
    if out is None or os.environ.get("MPIBENCH_HISTORY") == "off":  # benchmarks only: nothing to judge
        return None
    index = _field(continuation, "case_index") or 0
    return os.path.join(out, "history", case_id(index, config.scenario, config.strategy, config.recovery))


def open_history(config: RunConfig, continuation, worker: int, joined_step: int | None = None):
    """This process's history file for the case (``joined_step``: a replacement joining there)."""
    folder = case_dir(config, continuation)
    if folder is None:
        return NoHistory()
    return History(folder, worker, joined_step or 0, replacement=joined_step is not None)


def write_case_json(config: RunConfig, schedule, continuation, world_size: int) -> None:
    """``case.json``: what the checker needs to know about the case (first live member, before step 0)."""
    folder = case_dir(config, continuation)
    if folder is None:
        return
    write_case(folder, {
        "case": os.path.basename(folder), "index": _field(continuation, "case_index") or 0,
        "scenario": config.scenario, "strategy": config.strategy, "recovery": config.recovery,
        "world_size": world_size, "seed": config.seed, "config": config.as_dict(),
        "sharding": lookup(config.strategy).sharding_kind,
        "schedule": schedule_data(schedule), "replay": replay_command(config, world_size)})


def build_trainer(config: RunConfig, schedule, mpi_comm: MPI.Comm, worker_ids, records: RunRecords, backend,
                  world_size: int, pids=None, continuation=None, history=None, **resume) -> Trainer:
    """A trainer on ``mpi_comm``: plain, or under the fault schedule with its recovery policy.

    ``resume`` (replacements only): ``shard_id``, ``params``, ``cursor`` and the
    recovery ``state`` the survivors handed over. ``continuation`` is the job's
    (:mod:`mpibench.job.continuation`), carried to any replacement spawned. ``history``:
    where this worker appends its records (default: none kept).
    """
    from mpibench.faults.recovery import FaultRecovery
    from mpibench.faults.wrapper import Injector

    dataset = make_dataset(config.seed, config.samples, config.features, config.classes)
    shards = make_shards(config.seed, config.samples, world_size)
    me = worker_ids[mpi_comm.Get_rank()]
    state = resume.pop("state", None)
    parts = parts_for(config)
    if not schedule.events:
        comm = Comm(mpi_comm, worker_ids, deadline_s=config.deadline_s)
        return parts.trainer(config, comm, backend, dataset, shards, records, world_size, history=history,
                             **resume)
    injector = Injector(schedule, me, config.straggler_deadline, spent_kills=state is not None)
    if pids is None:
        pids = dict(zip(worker_ids, mpi_comm.allgather(os.getpid())))
    recovery = (parts.recovery or FaultRecovery)(config, schedule, injector, world_size, pids, continuation, state)
    comm = recovery.make_comm(mpi_comm, worker_ids)
    trainer = parts.trainer(config, comm, backend, dataset, shards, records, world_size, recovery=recovery,
                            history=history, **resume)
    if state is None:
        recovery.rebuild(trainer)  # the data plane gets its own communicator
    return trainer


def run_scenario(config: RunConfig, world: MPI.Comm, records: RunRecords, backend) -> Summary:
    """Train ``config.steps`` steps with checks; every rank returns the same summary."""
    from mpibench.faults import ulfm

    summary, comm = run_scenario_on(config, recoverable_dup(world), records, backend)
    ulfm.free(comm)
    return summary


def run_scenario_on(config: RunConfig, mpi_comm: MPI.Comm, records: RunRecords, backend,
                    continuation=None) -> tuple[Summary, MPI.Comm]:
    """Run one scenario on ``mpi_comm`` (ranks are workers 0..n-1); returns the summary and
    the communicator the survivors (and any replacements) continue on."""
    n = mpi_comm.Get_size()
    schedule = prepare(config, n)
    _check_ulfm(schedule)
    config = scenario_config(config, schedule)
    config.validate(n)
    if mpi_comm.Get_rank() == 0:
        write_case_json(config, schedule, continuation, n)
    history = open_history(config, continuation, mpi_comm.Get_rank())
    trainer = build_trainer(config, schedule, mpi_comm, tuple(range(n)), records, backend, n,
                            continuation=continuation, history=history)
    return train_and_finish(trainer, folder=case_dir(config, continuation))


def train_and_finish(trainer: Trainer, first_step: int = 0, folder: str | None = None) -> tuple[Summary, MPI.Comm]:
    """Run the loop, close the history, check the case on the first live member (``folder``:
    the case's history, None when none is kept), agree on the summary; returns it and the
    membership's communicator."""
    from mpibench.faults import ulfm
    from mpibench.faults.recovery import RunStuck

    error = None
    try:
        trainer.run(first_step)
    except RunStuck as exc:  # uniform: every member reached the same verdict
        error = str(exc)
        trainer.recovery.fresh_control(trainer)  # the last attempt revoked the old one
    bound = StepWatchdog(FINISH_BUDGET_S, abort=_finish_stuck)
    bound.arm(trainer.step_no, trainer.comm.worker_ids)
    trainer.close_history()
    try:
        trainer.comm.mpi.Barrier()  # every live member's history is complete before it is checked
    except MPI.Exception:
        pass  # a member died on the way out: the checker finds its file unclosed
    if trainer.comm.rank == 0 and folder is not None:
        online_check(folder, trainer.summary)
    summary = trainer.comm.mpi.bcast(trainer.summary if trainer.comm.rank == 0 else None, root=0)
    bound.disarm()
    if error:
        summary.error = error
    if trainer.strategy is not None:
        trainer.strategy.close()
    if trainer.data_comm is not None and trainer.data_comm.mpi != trainer.comm.mpi:
        ulfm.free(trainer.data_comm.mpi)
    # The membership's own communicator goes on: creating a new one here (Dup) is where
    # Open MPI crashed when a late failure notice arrived during its activation.
    return summary, trainer.comm.mpi


SHOWN_VIOLATIONS = 10
# From its last step to its summary a case's members wait on one another (a barrier, the
# first member's check of the history, a broadcast) with no deadline of their own: a member
# hung there would hold the job before its verdict for ever. Generous: the first member
# checks the case's whole history meanwhile (well under a second per case here).
FINISH_BUDGET_S = float(os.environ.get("MPIBENCH_FINISH_BUDGET_S", "60"))


def _finish_stuck(message: str) -> None:
    """Every member's own bound ends it: one line each, status 1 (never a pass)."""
    import sys

    from mpibench.base.runinfo import this_host

    sys.stderr.write(f"[{MPI.COMM_WORLD.Get_rank()}@{this_host()}] stuck: the case did not finish after its "
                     f"last step (the watch from its last step: {message})\n")
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(1)


def online_check(folder: str, summary: Summary) -> None:
    """Check the case's history now; print each violation with its step, fill ``summary``."""
    import time

    from mpibench.check import check_case

    start = time.perf_counter()
    verdict = check_case(folder)
    summary.check_s += time.perf_counter() - start
    summary.case_verdict = verdict
    summary.checks, summary.violations = verdict.checks, verdict.violations
    summary.unknown = sum(1 for r in verdict.rows if r.passed is None)
    if verdict.first_violation is not None:
        v = verdict.first_violation
        summary.first_violation = (v.step, v.invariant, v.detail)
    bad = [row for row in verdict.rows if row.passed is not True]
    for row in bad[:SHOWN_VIOLATIONS]:
        print(f"violation: {verdict.case} step {row.step}: {row.invariant}: {row.detail}", flush=True)
    if len(bad) > SHOWN_VIOLATIONS:
        print(f"violation: {verdict.case}: {len(bad) - SHOWN_VIOLATIONS} more (see invariants.csv)", flush=True)
    if verdict.verdict == "unknown":
        summary.unknown += 1
        print(f"check: {verdict.case}: cannot judge: {verdict.reason}", flush=True)


def resume_scenario(merged: MPI.Comm, resume, records: RunRecords):
    """A replacement's share of the scenario it was spawned into (``resume`` is a
    :class:`mpibench.faults.respawn.Resume`): join at the failed step and run to
    the end; returns the config, the summary and the membership's communicator."""
    from mpibench.kernels import select_backend

    config, step = resume.config, resume.step
    me = resume.ids[merged.Get_rank()]
    history = open_history(config, resume.after, me, joined_step=step)
    trainer = build_trainer(config, resume.schedule, merged, resume.ids, records,
                            select_backend(config.device), resume.world_size, resume.pids, resume.after,
                            shard_id=me, params=resume.params.copy(), cursor=resume.cursors[me],
                            state=resume.state, history=history, known_cursors=resume.cursors)
    trainer.recovery.recover(trainer, step, None, joined=True)
    summary, comm = train_and_finish(trainer, first_step=step, folder=case_dir(config, resume.after))
    return config, summary, comm


def free_comm(comm: MPI.Comm) -> None:
    """Done with the job's last membership: kept for the last agreement before leaving
    (``faults.ulfm.exit_process``), which frees it afterwards."""
    from mpibench.faults import ulfm

    ulfm.leave_with(comm)
