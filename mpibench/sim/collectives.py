"""What each simulated collective computes once its members have arrived, one function per kind.

Each function fills ``coll.results`` (contributing rank -> what its call
returns) from the contributions (rank -> (arrival time, payload, acknowledged
failures)). Objects are copied through pickle, as between real processes, so
no two simulated processes ever share a mutable object; buffers are reduced in
rank order in their own element type. A result that is an :class:`Error` makes
the call raise that MPI error class.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .ops import reduce_in_order
from .world import ERR_PROC_FAILED, ERR_SPAWN, CommState


@dataclass(frozen=True)
class Error:
    error_class: int


def _ranks(coll):
    return sorted(coll.contribs)


def _reduce(values, op: str):
    return reduce_in_order(values, op)


def _recursive_doubling(values, op: str):
    """The sum in the order Open MPI's recursive doubling forms it (its choice for the buffers
    mpibench reduces natively, seen on this machine: at p = 4, (a0 + a1) + (a2 + a3), not the
    rank order): the ranks past the largest power of two are folded into their even
    neighbours first, then the partial sums are combined pairwise."""
    adjusted = 1 << (len(values).bit_length() - 1)
    extra = len(values) - adjusted
    parts = [_reduce(values[r - 1:r + 1], op) for r in range(1, 2 * extra, 2)] + list(values[2 * extra:])
    while len(parts) > 1:
        parts = [_reduce(parts[i:i + 2], op) for i in range(0, len(parts), 2)]
    return parts[0]


def allreduce_buf(world, coll, absent) -> None:
    ranks = _ranks(coll)
    total = _recursive_doubling([coll.contribs[r][1][0] for r in ranks], coll.contribs[ranks[0]][1][2])
    for r in ranks:
        np.copyto(coll.contribs[r][1][1], total)
        coll.results[r] = None


def allgather_buf(world, coll, absent) -> None:
    ranks = _ranks(coll)
    parts = np.concatenate([np.asarray(coll.contribs[r][1][0]).reshape(-1) for r in ranks])
    for r in ranks:
        out = coll.contribs[r][1][1]
        np.copyto(out.reshape(-1), parts.view(out.dtype))
        coll.results[r] = None


def bcast_buf(world, coll, absent) -> None:
    ranks = _ranks(coll)
    root = coll.contribs[ranks[0]][1][1]
    data = np.array(coll.contribs[root][1][0], copy=True)
    for r in ranks:
        if r != root:
            np.copyto(coll.contribs[r][1][0], data)
        coll.results[r] = None


def barrier(world, coll, absent) -> None:
    for r in coll.contribs:
        coll.results[r] = None


def allgather_obj(world, coll, absent) -> None:
    values = [coll.contribs[r][1] for r in _ranks(coll)]
    for r in coll.contribs:
        coll.results[r] = world.copy(values)


def bcast_obj(world, coll, absent) -> None:
    ranks = _ranks(coll)
    root = coll.contribs[ranks[0]][1][1]
    value = coll.contribs[root][1][0]
    for r in ranks:
        coll.results[r] = world.copy(value)


def gather_obj(world, coll, absent) -> None:
    ranks = _ranks(coll)
    root = coll.contribs[ranks[0]][1][1]
    values = [coll.contribs[r][1][0] for r in ranks]
    for r in ranks:
        coll.results[r] = world.copy(values) if r == root else None


def allreduce_obj(world, coll, absent) -> None:
    ranks = _ranks(coll)
    op = coll.contribs[ranks[0]][1][1]
    values = [coll.contribs[r][1][0] for r in ranks]
    if op in ("sum", "max", "min"):
        total = max(values) if op == "max" else (min(values) if op == "min" else sum(values[1:], values[0]))
    else:  # the other operations, as mpi4py combines objects left to right
        total = functools.reduce(op, values)
    for r in ranks:
        coll.results[r] = world.copy(total)


def agree(world, coll, absent) -> None:
    """The AND of the flags; uniformly ERR_PROC_FAILED while a noticed failure was not
    acknowledged by every participant when it called."""
    comm = coll.comm
    observer = comm.procs[_ranks(coll)[0]]
    failed = {p.gid for p in comm.procs if world.notice_s(p, observer) <= coll.done_s}
    unacked = any(not failed <= acked for _, _, acked in coll.contribs.values())
    value = -1  # all bits set: MPI_Comm_agree is the bitwise AND of the integer flags
    for _, flag, _ in coll.contribs.values():
        value &= int(flag)
    for r in coll.contribs:
        coll.results[r] = Error(ERR_PROC_FAILED) if unacked else value


def _new_comm(world, procs, ranks_in_old, coll):
    state = CommState(world, procs)
    for new_rank, old_rank in enumerate(ranks_in_old):
        coll.results[old_rank] = world.handle(state, new_rank)


def shrink(world, coll, absent) -> None:
    ranks = _ranks(coll)
    _new_comm(world, [coll.comm.procs[r] for r in ranks], ranks, coll)


def dup(world, coll, absent) -> None:
    shrink(world, coll, absent)


def split(world, coll, absent) -> None:
    colors: dict = {}
    for r in _ranks(coll):
        color, key = coll.contribs[r][1]
        colors.setdefault(color, []).append((key, r))
    for color, keyed in colors.items():
        ranks = [r for _, r in sorted(keyed)]
        if color is None:
            for r in ranks:
                coll.results[r] = "null"
            continue
        _new_comm(world, [coll.comm.procs[r] for r in ranks], ranks, coll)


def create_group(world, coll, absent) -> None:
    ranks = list(coll.members)
    _new_comm(world, [coll.comm.procs[r] for r in ranks], ranks, coll)


def spawn(world, coll, absent) -> None:
    """New processes, and an inter-communicator between the spawners and them."""
    ranks = _ranks(coll)
    count = coll.contribs[ranks[0]][1]
    slots = world.options.spawn_slots
    if slots is not None and world.spawned + count > slots:
        for r in ranks:
            coll.results[r] = Error(ERR_SPAWN)
        return
    children = world.spawner(count, coll.done_s)
    inter = CommState(world, [coll.comm.procs[r] for r in ranks] + children, inter_low=len(ranks))
    for i, r in enumerate(ranks):
        coll.results[r] = world.handle(inter, i)
    for j, child in enumerate(children):
        child.parent = world.handle(inter, len(ranks) + j)


def merge(world, coll, absent) -> None:
    """Spawners (``high=False``) first, then the spawned, each in their own order."""
    comm = coll.comm
    order = sorted(_ranks(coll), key=lambda r: (bool(coll.contribs[r][1]), r))
    _new_comm(world, [comm.procs[r] for r in order], order, coll)


RESULTS = {
    "allreduce": allreduce_buf, "allgather": allgather_buf, "bcast": bcast_buf, "barrier": barrier,
    "allgather_obj": allgather_obj, "bcast_obj": bcast_obj, "gather_obj": gather_obj,
    "allreduce_obj": allreduce_obj, "agree": agree, "shrink": shrink, "dup": dup, "split": split,
    "create_group": create_group, "spawn": spawn, "merge": merge,
}
