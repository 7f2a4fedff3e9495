"""What the logarithmic strategies share: buckets by global offset, a cached round list, the check.

A subclass says how one buffer becomes a :class:`~.rounds.Round` list and
which ``(global offset, length)`` pieces it is built from; this base cuts
the buffer into buckets of at most ``options["bucket_bytes"]`` (the ring's
default when absent), caches the compiled rounds per buffer, checks the
pieces against the ``reassemble`` contract before anything is sent (a plan
that fails it leaves the buffer unreduced and is still reported, so the
``coverage`` invariant names it) and runs the rounds.

The helpers below compile the two flat algorithms over any *group* of
communicator ranks, so the hierarchical strategy reuses them for its
node leaders.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import plans, segments
from .base import Reduction, SyncStrategy
from .ring import DEFAULT_BUCKET_BYTES
from .rounds import Round, compact, run_rounds


@dataclass
class Compiled:
    """One buffer's plan: rounds to run, pieces to report, whether the pieces cover it."""

    buf: object
    rounds: list
    pieces: list
    valid: bool
    algorithm: str
    reduction: Reduction | None = None  # what reduce() returns, set once


class BucketedStrategy(SyncStrategy):
    """Base of ``rd``, ``rabenseifner`` and ``hier``; subclasses define :meth:`compile`."""

    tag = 30

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        bucket_bytes = int(self.options.get("bucket_bytes") or DEFAULT_BUCKET_BYTES)
        self.bucket_elems = max(1, bucket_bytes // self.buffer.dtype.itemsize)
        self._compiled: Compiled | None = None

    def compile(self, buf) -> Compiled:
        raise NotImplementedError

    def compiled_for(self, buf) -> Compiled:
        if self._compiled is None or self._compiled.buf is not buf:
            self._compiled = self.compile(buf)
            plan = self._compiled
            # The same membership, pieces and algorithm every call: built once (a short
            # message's reduction takes a few microseconds, an object costs one of them).
            plan.reduction = Reduction(self.comm.worker_ids, plan.pieces, len(buf), plan.algorithm)
        return self._compiled

    def reduce(self, buf) -> Reduction:
        plan = self.compiled_for(buf)
        if plan.valid:
            run_rounds(self.comm, self.backend, plan.rounds, self.tag)
        return plan.reduction


def views(buf, plan: segments.SegmentPlan, bucket: int, first: int, end: int):
    """The contiguous slice of ``buf`` holding segments ``[first, end)`` of ``bucket``."""
    if end <= first:
        return buf[0:0]
    start = int(plan.offsets[bucket, first])
    stop = int(plan.offsets[bucket, end - 1] + plan.widths[bucket, end - 1])
    return buf[start:stop]


def fold_in(group, me: int, fold: plans.Fold, buckets, scratch) -> Round:
    """The fold before the core: an even rank of the first 2*extra hands its buckets over."""
    partner = fold.partner(me)
    rnd = Round((group[partner],) if partner is not None else ())
    if partner is None:
        return rnd
    for view, space in zip(buckets, scratch):
        if fold.folded_out(me):
            rnd.send(view, group[partner])
        else:
            rnd.recv(space, group[partner], into=view)
    return rnd


def fold_out(group, me: int, fold: plans.Fold, buckets) -> Round:
    """The fold after the core: the odd rank hands the result back into place."""
    partner = fold.partner(me)
    rnd = Round((group[partner],) if partner is not None else ())
    if partner is None:
        return rnd
    for view in buckets:
        if fold.folded_out(me):
            rnd.recv(view, group[partner])
        else:
            rnd.send(view, group[partner])
    return rnd


def rd_rounds(group, me: int, buckets, scratch) -> list[Round]:
    """Recursive doubling of whole buckets over ``group`` (comm ranks), ``me`` its position."""
    fold = plans.Fold(len(group))
    rounds = [fold_in(group, me, fold, buckets, scratch)]
    v = fold.core_rank(me)
    if v is not None:
        for partner in plans.doubling_partners(fold.core, v):
            peer = group[fold.rank_of(partner)]
            rnd = Round((peer,))
            for view, space in zip(buckets, scratch):
                rnd.send(view, peer)
                rnd.recv(space, peer, into=view)
            rounds.append(rnd)
    rounds.append(fold_out(group, me, fold, buckets))
    return compact(rounds)


def halving_doubling_rounds(group, me: int, buf, scratch, plan: segments.SegmentPlan) -> list[Round]:
    """Rabenseifner over ``group``: fold, reduce-scatter by halving, all-gather by doubling, unfold.

    ``plan`` cuts every bucket into ``Fold(len(group)).core`` segments; block
    ranges of the halving steps become contiguous slices of each bucket.
    """
    fold = plans.Fold(len(group))
    whole = [views(buf, plan, b, 0, plan.parts) for b in range(plan.buckets)]
    spare = [views(scratch, plan, b, 0, plan.parts) for b in range(plan.buckets)]
    rounds = [fold_in(group, me, fold, whole, spare)]
    v = fold.core_rank(me)
    if v is not None:
        steps = plans.halving_steps(fold.core, v)
        for step in steps:  # reduce-scatter: send one half, add the partner's copy of the other
            peer = group[fold.rank_of(step.partner)]
            rnd = Round((peer,))
            for b in range(plan.buckets):
                rnd.send(views(buf, plan, b, *step.send), peer)
                rnd.recv(views(scratch, plan, b, *step.keep), peer, into=views(buf, plan, b, *step.keep))
            rounds.append(rnd)
        for step in reversed(steps):  # all-gather: the reduced half goes out, the other comes in
            peer = group[fold.rank_of(step.partner)]
            rnd = Round((peer,))
            for b in range(plan.buckets):
                rnd.send(views(buf, plan, b, *step.keep), peer)
                rnd.recv(views(buf, plan, b, *step.send), peer)
            rounds.append(rnd)
    rounds.append(fold_out(group, me, fold, whole))
    return compact(rounds)
