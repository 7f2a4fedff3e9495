"""Partition views: which side may commit, who stalls, and re-syncing once the cut heals.

Every member reports which peers it can reach; the sides are the groups that
reach each other both ways. Only a strict majority side commits; the others
stall (keep their parameters, consume nothing). When the cut heals, the
stalled workers take the parameters of the committing side's first member,
whoever that is: worker 0 may be on either side.
"""
from __future__ import annotations

from mpibench.engine.worker import digest


def components(members, reach: dict[int, set[int]]) -> list[set[int]]:
    """Sides of the membership: groups of workers that reach each other both ways."""
    left = list(members)
    found = []
    while left:
        first = left.pop(0)
        side = {first} | {w for w in left if w in reach.get(first, ()) and first in reach.get(w, ())}
        left = [w for w in left if w not in side]
        found.append(side)
    return found


def plan(recovery, trainer, step: int, reports) -> None:
    """The next attempt's stalled and late workers, from every member's (id, late, reachable)."""
    s = recovery.state
    members = trainer.comm.worker_ids
    late = {w for w, is_late, _ in reports if is_late}
    reach = {w: set(r) for w, _, r in reports}
    found = components(members, reach)
    majority = [side for side in found if 2 * len(side) > len(members)]
    was_cut = bool(s.stalled) or s.no_majority
    if majority:
        s.stalled, s.no_majority = set(members) - majority[0], False
    else:
        s.stalled, s.no_majority = set(members), True
    s.late = late - s.stalled
    if not (s.late or s.stalled or s.no_majority or recovery._lost):
        s.patient = True  # nobody late, cut off or dead: the machine is just slow
    if (s.stalled or s.no_majority) and not was_cut:
        recovery.log.partition(trainer, step, members, found, majority[0] if majority else None)


def healed(recovery, trainer) -> bool:
    members = trainer.comm.worker_ids
    views = trainer.comm.mpi.allgather(recovery.injector.reachable_set(members))
    return all(len(v) == len(members) for v in views)


def resync(recovery, trainer, step: int) -> None:
    """The cut-off workers take the parameters of the committing side's first member
    (after a split brain nobody committed: every member holds the same ones)."""
    s = recovery.state
    rejoining = sorted(s.stalled)
    committing = [w for w in trainer.comm.worker_ids if w not in s.stalled] or list(trainer.comm.worker_ids)
    root = trainer.comm.worker_ids.index(committing[0])
    params = trainer.comm.mpi.bcast(trainer.params if trainer.comm.rank == root else None, root=root)
    if trainer.comm.worker_id in s.stalled:
        trainer.params[...] = params
    recovery.log.resync(trainer, step, rejoining, committing[0], digest(params))
    s.stalled, s.no_majority = set(), False


def stall_digests(recovery, trainer) -> dict[int, str]:
    """Every stalled member's parameter digest, on the membership's first rank (collective)."""
    digests = trainer.comm.mpi.gather(digest(trainer.params), root=0)
    s = recovery.state
    stalled = set(trainer.comm.worker_ids) if s.no_majority else s.stalled
    return {w: d for w, d in zip(trainer.comm.worker_ids, digests or ()) if w in stalled}
