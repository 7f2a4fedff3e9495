"""Replacement workers: spawn, merge, hand over the state, and the replacement's entry.

Survivors call ``Spawn(sys.executable, ['-m', 'mpibench', '_replacement'])``
(the job's own entry point) on their shrunk communicator and ``Merge`` the
inter-communicator; the new processes do the same from ``Get_parent()``.
Rank 0 then broadcasts one payload over the merged communicator, a frozen
continuation saying what the newcomers do. Inside a scenario that is a
:class:`Resume`: which worker ids they take, the step, the parameters, each
dead worker's data cursor, the recovery state, and ``after``, the job
layer's own continuation, carried here without being read. A replacement
takes the dead worker's id and therefore its shard, and resumes it where the
dead worker stood: the survivors know how many batches each worker used up,
and the walk through a shard is a pure function of the seed.

This module never imports the job layer: the replacement's process hands
:func:`replacement_main` the job's entry callable, which receives the merged
communicator and the continuation.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI


from . import ulfm
from .ulfm import settle

ENTRY = ["-m", "mpibench", "_replacement"]
_spawned = False  # this process joined through join(); Get_parent() is freed there


def was_spawned() -> bool:
    """Whether this process was started by survivors' ``Spawn`` rather than by the launcher."""
    return _spawned


@dataclass(frozen=True)
class Resume:
    """Join the scenario being recovered at ``step``, then do ``after``."""

    config: object  # RunConfig
    schedule: object  # Schedule
    world_size: int
    step: int
    ids: tuple[int, ...]  # worker ids of the merged communicator, by rank
    new_ids: tuple[int, ...]
    params: np.ndarray
    cursors: dict  # worker id -> Cursor, every worker's (the new ids' where they resume)
    pids: dict  # worker id -> pid (survivors; the newcomers add theirs)
    state: object  # the recovery protocol's state (faults.recovery.RecoveryState)
    after: object  # the job layer's continuation


class SpawnRefused(RuntimeError):
    """The launcher started no replacement process: the run cannot go on as scheduled.

    Most often the allocation has no free slot (``mpirun -n N`` on N slots);
    ``first`` says whether this process is the spawning communicator's rank 0,
    so that one process reports it.
    """

    def __init__(self, message: str, first: bool):
        super().__init__(message)
        self.first = first


def spawn(comm: MPI.Comm, count: int, payload) -> tuple[MPI.Comm, object]:
    """``count`` new processes merged after ``comm``'s ranks; ``payload`` from rank 0 to all."""
    try:
        inter = comm.Spawn(sys.executable, args=ENTRY, maxprocs=count, root=0)
    except MPI.Exception as exc:
        raise SpawnRefused(
            f"the launcher started no replacement process ({exc.Get_error_string().strip()}); "
            f"respawn needs a free slot for each of {count} replacement(s): run mpirun with "
            "--oversubscribe or with more slots than ranks (or use --recovery shrink)",
            first=comm.Get_rank() == 0) from None
    merged = inter.Merge(high=False)
    merged.Set_errhandler(MPI.ERRORS_RETURN)
    settle(merged)
    inter.Free()
    payload = merged.bcast(payload if merged.Get_rank() == 0 else None, root=0)
    return merged, payload


def join() -> tuple[MPI.Comm, object]:
    """In a replacement: merge with the survivors and receive the payload."""
    global _spawned
    _spawned = True
    parent = MPI.Comm.Get_parent()
    if parent == MPI.COMM_NULL:
        raise RuntimeError("the replacement entry is started by survivors (MPI Spawn), not by hand")
    merged = parent.Merge(high=True)
    merged.Set_errhandler(MPI.ERRORS_RETURN)
    settle(merged)
    parent.Free()
    payload = merged.bcast(None, root=0)
    return merged, payload


def spawn_replacements(recovery, trainer, step: int, gone: list[int]) -> None:
    """During recovery (survivors): replace ``gone`` workers and continue on the merged comm."""
    control = trainer.comm
    dead = tuple(sorted(gone))
    payload = None
    if control.rank == 0:
        # Every worker's cursor after the last commit, as the loop tracks it: the
        # replacements resume from their dead workers' (steps.csv's epochs need the rest).
        cursors = dict(trainer.known_cursors)
        payload = recovery.hand_over(Resume(recovery.config, recovery.schedule, recovery.world_size, step,
                                            tuple(control.worker_ids) + dead, dead, trainer.params, cursors,
                                            dict(recovery.log.pids), recovery.state, recovery.continuation))
    merged, payload = spawn(control.mpi, len(dead), payload)
    pids = merged.allgather(os.getpid())
    recovery.log.pids.update(dict(zip(payload.ids, pids)))
    recovery.state.respawned.update(dead)
    trainer.comm = recovery.make_comm(merged, payload.ids)
    for w in dead:
        recovery.log.respawn(trainer, step, w, payload.cursors[w], recovery.params_digest(trainer))
    ulfm.free(control.mpi)


def replacement_main(entry) -> int:
    """Entry of a spawned replacement: join, then ``entry(merged_comm, continuation)``.

    A :class:`Resume` gets the pids of the merged job filled in first (the
    survivors gather them right after the spawn).
    """
    ulfm.note_disturbance()  # connected to a job that lost processes
    merged, payload = join()
    if isinstance(payload, Resume):
        pids = merged.allgather(os.getpid())
        from dataclasses import replace

        payload = replace(payload, pids={**payload.pids, **dict(zip(payload.ids, pids))})
    return entry(merged, payload)
