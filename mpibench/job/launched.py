"""Keeping a launched process alive through every case of a multi-case launch.

Open MPI's ULFM (5.0.x) loses the failure notice when every process that
``mpirun`` started has died and only spawned ones remain: the survivors wait in
``MPIX_Comm_agree`` for ever (``repro/ulfm_lost_failure.py``). A process kept
outside the members (a "keeper") does not cure every such world (the repro
shows one it does not), while one launched *member* that survives does. So the
rule is stated on the members: at least one process the launcher started holds
a worker id that the case's schedule never kills.

A batch (and the main job's own sweep) restores its world size between cases
by spawning, so after a few cases with kills many members are spawned and the
launched ones may sit exactly at the ids the next case kills. Before such a
case, one launched member swaps places with the member holding the lowest id
the schedule spares (a ``Split`` with the new order; nothing else moves). The
schedule is carried out as written (the same ids die at the same steps, and a
worker's data follows its id, not its process), and a replacement takes the
dead worker's id, so "a launched member at an id no kill names" keeps a
launched process alive through the whole case.
"""
from __future__ import annotations

from mpi4py import MPI


def kill_ids(schedule) -> set[int]:
    return {event.rank for event in schedule.events if event.kind == "kill"}


def new_order(launched: list[bool], killed: set[int]) -> list[int] | None:
    """The old rank of each new rank, or None when nothing needs to move.

    ``launched[i]``: member ``i`` was started by the launcher. Nothing moves when
    every member was launched (the case's own ``run`` world), when none was (no
    order can help), when no kill is scheduled, or when a launched member already
    holds an id that no kill names.
    """
    n = len(launched)
    spared = [i for i in range(n) if i not in killed]
    if all(launched) or not any(launched) or not killed or not spared:
        return None
    if any(launched[i] for i in spared):
        return None
    order = list(range(n))
    src, dst = launched.index(True), spared[0]
    order[src], order[dst] = order[dst], order[src]
    return order


def keep_launched_member(comm: MPI.Comm, schedule) -> MPI.Comm:
    """``comm``, or a reordered copy of it whose members at the ids the schedule spares
    include a launched process. Collective over ``comm``, which is left as it is (it may
    be the one the job's last agreement uses, as after a restore; a spare handle costs
    nothing)."""
    from mpibench.faults.respawn import was_spawned

    launched, killed = comm.allgather(not was_spawned()), kill_ids(schedule)
    order = new_order(launched, killed)
    if order is None:
        return comm
    reordered = comm.Split(0, order.index(comm.Get_rank()))
    reordered.Set_errhandler(MPI.ERRORS_RETURN)
    if reordered.Get_rank() == 0:
        kept = next(i for i, old in enumerate(order) if launched[old] and i not in killed)
        print(f"a launched process takes worker id {kept}, which no kill of the case names "
              "(ULFM cannot recover a world of spawned processes only)", flush=True)
    return reordered
