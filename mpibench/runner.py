"""Runs one scenario under one strategy on a communicator and agrees on the outcome."""
from __future__ import annotations

from mpi4py import MPI

from .comm import Comm
from .config import RunConfig, UsageError
from .data import make_dataset, make_shards
from .records import RunRecords
from .worker import Summary, Trainer


def recoverable_dup(world: MPI.Comm) -> MPI.Comm:
    """A private copy of ``world`` whose errors are returned, not fatal."""
    comm = world.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    return comm


def prepare(config: RunConfig, world_size: int):
    """Validate and load everything a run needs; UsageError on bad input."""
    from mpibench.faults import load_schedule

    from mpibench.sync import STRATEGIES

    config.validate(world_size)
    if config.strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {config.strategy!r} (choose from {', '.join(STRATEGIES)})")
    try:
        schedule = load_schedule(config.scenario, world_size, config.seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return schedule


def run_scenario(config: RunConfig, world: MPI.Comm, records: RunRecords, backend) -> Summary:
    """Train ``config.steps`` steps with checks; every rank returns the same summary."""
    from mpibench.faults import wrap

    schedule = prepare(config, world.Get_size())
    dataset = make_dataset(config.seed, config.samples, config.features, config.classes)
    shards = make_shards(config.seed, config.samples, world.Get_size())
    mpi_comm = recoverable_dup(world)
    comm = wrap(Comm(mpi_comm, deadline_s=config.deadline_s), schedule, records.faults)
    trainer = Trainer(config, comm, backend, dataset, shards, records, world.Get_size())
    trainer.run()
    # Verdicts live on the checking rank; everyone leaves with its summary.
    summary = trainer.comm.mpi.bcast(trainer.summary if trainer.comm.rank == 0 else None, root=0)
    trainer.strategy.close()
    if trainer.comm.mpi != MPI.COMM_WORLD:
        trainer.comm.mpi.Free()
    return summary
