"""Replacement workers: spawn, merge, hand over the state, and the replacement's entry.

Survivors call ``Spawn(sys.executable, ['-m', 'mpibench', '_replacement'])``
on their shrunk communicator and ``Merge`` the inter-communicator; the new
processes do the same from ``Get_parent()``. Rank 0 then broadcasts one
payload over the merged communicator: what the newcomers are (worker ids),
where the run stands (step, parameters, each dead worker's data cursor) and
what to do after the current scenario (the continuation). A replacement
takes the dead worker's id and therefore its shard, and resumes it at the
cursor the checking rank last recorded for it: the shard is not
redistributed, its samples simply continue.
"""
from __future__ import annotations

import os
import sys

from mpi4py import MPI

from mpibench.engine.data import Cursor
from mpibench.engine.worker import digest

from .ulfm import settle

ENTRY = ["-m", "mpibench", "_replacement"]


def spawn(comm: MPI.Comm, count: int, payload: dict | None) -> tuple[MPI.Comm, dict]:
    """``count`` new processes merged after ``comm``'s ranks; ``payload`` from rank 0 to all."""
    inter = comm.Spawn(sys.executable, args=ENTRY, maxprocs=count, root=0)
    merged = inter.Merge(high=False)
    merged.Set_errhandler(MPI.ERRORS_RETURN)
    settle(merged)
    inter.Free()
    payload = merged.bcast(payload if merged.Get_rank() == 0 else None, root=0)
    return merged, payload


def join() -> tuple[MPI.Comm, dict]:
    """In a replacement: merge with the survivors and receive the payload."""
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
    dead = sorted(gone)
    payload = None
    if control.rank == 0:
        payload = {"kind": "resume", "config": recovery.config, "schedule": recovery.schedule,
                   "world_size": recovery.world_size, "step": step,
                   "ids": list(control.worker_ids) + dead, "new_ids": dead,
                   "params": trainer.params, "cursors": {w: trainer.known_cursors.get(w, Cursor()) for w in dead},
                   "pids": recovery.pids, "state": recovery.state(), "continuation": recovery.continuation}
    merged, payload = spawn(control.mpi, len(dead), payload)
    pids = merged.allgather(os.getpid())
    ids = payload["ids"]
    recovery.pids.update(dict(zip(ids, pids)))
    recovery.respawned.update(dead)
    trainer.comm = recovery.make_comm(merged, ids)
    if trainer.comm.rank == 0:
        for w in dead:
            c = payload["cursors"][w]
            recovery._fault(trainer, step, "recovery", w, "respawn",
                            f"replacement resumes shard {w} at epoch {c.epoch} "
                            f"position {c.position}; params digest {digest(trainer.params)[:12]}")
            print(f"fault: replacement for worker {w} is pid {recovery.pids[w]}", flush=True)
    ulfm_free(control.mpi)


def ulfm_free(comm) -> None:
    from .ulfm import free

    free(comm)


def replacement_main() -> int:
    """Entry of a spawned replacement: join, then do what the payload says."""
    from . import ulfm

    ulfm.note_disturbance()  # connected to a job that lost processes
    merged, payload = join()
    if payload["kind"] == "resume":
        pids = merged.allgather(os.getpid())
        from mpibench.job.runner import resume_scenario

        payload["pids"] = {**payload["pids"], **dict(zip(payload["ids"], pids))}
        return resume_scenario(merged, payload)
    from mpibench.job.suite import continue_main_job

    return continue_main_job(merged, payload["continuation"], payload["continuation"]["index"])
