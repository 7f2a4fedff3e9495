"""Known-bad reductions ("mutants") that the self-test feeds to the checker.

Each mutant is a sync strategy with one deliberate mistake, plugged in
through the ordinary :class:`~mpibench.sync.base.SyncStrategy` interface and
the trainer's ``strategy_factory`` (``stale-rejoin`` also wraps two recovery
hooks). None of them is registered in :data:`mpibench.sync.STRATEGIES`; a run
gets one only through the public run-parts hook, ``run --run-parts
mpibench.selftest.variants:NAME`` (:func:`parts`, :func:`mpibench.job.parts.parts_for`).

The arithmetic mistakes are mixins over any production strategy class, so the
same mistake can be tried under native, ring or PS:

* ``unweighted``: plain mean of the per-worker mean gradients;
* ``numerator-only``: gradient sums weighted by count, but divided by the number
  of replicas times the nominal batch size, as if every batch were full;
* ``variance-within``: loss variance pooled from per-worker variances only,
  without the spread between the workers' means.

The placement mistakes are planted in the production ring
(:class:`mpibench.sync.ring.RingAllreduce`), whose buckets and segments are
named by global offset:

* ``offset-blind``: the reduced pieces concatenated in the order they
  arrived, ignoring their global offsets;
* ``bounds-only``: an off-by-one segment plan (each segment runs one element
  into the next) whose pieces are checked only against the buffer's bounds,
  so the overlaps are written instead of refused.

The recovery mistakes need fault injection to show: ``dead-leak`` and
``double-apply`` are strategy mixins that carry state from an aborted attempt
into its redo; ``stale-rejoin`` overrides two hooks of the fault recovery
(:func:`.recovery_mutants.stale_rejoin_recovery`) so that healed and respawned workers keep
stale parameters.
"""
from __future__ import annotations

import numpy as np

from mpibench.sync.base import Reduction

from .catalogue import MUTANTS
from .recovery import DeadLeakMixin, DoubleApplyMixin, stale_rejoin_recovery


# ---------------------------------------------------------------------------- weighting mistakes
class UnweightedMixin:
    """Every contributing replica's mean gradient weighs the same."""

    def synchronize(self, params, grad_sum, count, lr):
        # Ship the local *mean*; the count still travels so the effective batch is right.
        mean = grad_sum / np.float32(count) if count else np.zeros_like(grad_sum)
        self.backend.pack(self.buffer, mean, count)
        reduction = self.reduce(self.buffer)
        replicas = len(reduction.contributing)
        self.backend.apply_update(params, self.buffer[:-1], replicas, lr)
        return reduction


class NumeratorOnlyMixin:
    """Count-weighted numerator, divided by replicas x the nominal batch size."""

    nominal_batch = 1

    def synchronize(self, params, grad_sum, count, lr):
        self.backend.pack(self.buffer, grad_sum, count)
        reduction = self.reduce(self.buffer)
        divisor = len(reduction.contributing) * self.nominal_batch
        self.backend.apply_update(params, self.buffer[:-1], divisor, lr)
        return reduction


class VarianceWithinMixin:
    """Pools per-worker variances, forgetting the between-worker term.

    The loop pools the gathered ``(count, sum, sumsq)`` rows by summing them,
    so the mistake is made in the rows: each worker's squares are re-centred
    on the global mean, as if every worker's mean were the global one. The
    pooled variance is then the count-weighted mean of the within-worker
    variances; the pooled mean is unchanged.
    """

    def pool_loss(self, local_row, contributing):
        rows = super().pool_loss(local_row, contributing).copy()
        used = rows[:, 0] > 0
        if not used.any():
            return rows
        counts, sums = rows[used, 0], rows[used, 1]
        global_mean = sums.sum() / counts.sum()
        rows[used, 2] += counts * global_mean**2 - sums**2 / counts
        return rows


# ---------------------------------------------------------------------------- placement mistakes
def _ring():
    from mpibench.sync import ring, segments

    return ring, segments


def arrival_order(plan, rank: int) -> list[tuple[int, int]]:
    """The ring's pieces in the order they are complete on ``rank``, bucket by bucket.

    First the segment this rank finished reducing, ``(r + 1) % p``, then the
    all-gather deliveries ``r, r - 1, ...`` (see :mod:`mpibench.sync.ring`).
    """
    p = plan.parts
    order = [(rank + 1 - s) % p for s in range(p)]
    return [(int(plan.offsets[b, seg]), int(plan.widths[b, seg]))
            for b in range(plan.buckets) for seg in order]


def offset_blind_ring():
    ring, _ = _ring()

    class OffsetBlindRing(ring.RingAllreduce):
        """The real ring, then its pieces concatenated in arrival order, offsets ignored."""

        name = "offset-blind"

        def reduce(self, buf) -> Reduction:
            super().reduce(buf)
            arrived = arrival_order(self.rounds_for(buf).plan, self.comm.rank)
            values = [buf[o:o + n].copy() for o, n in arrived]
            pieces, cursor = [], 0
            for v in values:
                buf[cursor:cursor + len(v)] = v
                pieces.append((cursor, len(v)))
                cursor += len(v)
            return Reduction(self.comm.worker_ids, pieces, len(buf))

    return OffsetBlindRing


def bounds_only_ring():
    ring, segments = _ring()

    class BoundsOnlyPlan(segments.SegmentPlan):
        """Accepts any plan whose pieces stay inside the buffer: gaps and overlaps pass."""

        def covers(self) -> bool:
            ends = self.offsets + self.widths
            return bool((self.offsets >= 0).all() and (ends <= self.total).all())

    class BoundsOnlyRing(ring.RingAllreduce):
        """An off-by-one plan (each segment runs one element into the next), bounds-checked only."""

        name = "bounds-only"

        def rounds_for(self, buf):
            if self._rounds is None or self._rounds.buf is not buf:
                good = segments.bucket_plan(len(buf), self.bucket_elems, self.comm.size)
                widths = good.widths.copy()
                widths[:, :-1] += 1
                widths = np.minimum(widths, good.total - good.offsets)
                plan = BoundsOnlyPlan(good.offsets, widths, good.total)
                self._rounds = ring._Rounds(buf, plan, self.comm.rank, self.backend)
            return self._rounds

    return BoundsOnlyRing


# ---------------------------------------------------------------------------- catalogue
MIXINS = {"unweighted": UnweightedMixin, "numerator-only": NumeratorOnlyMixin,
          "variance-within": VarianceWithinMixin}
RINGS = {"offset-blind": offset_blind_ring, "bounds-only": bounds_only_ring}


def strategy_factory(mutant: str, batch_size: int):
    """A drop-in for :func:`mpibench.sync.make_strategy` that builds the mutant.

    The placement mutants are always the ring; the others carry their mistake
    into whichever strategy the run names.
    """
    from mpibench.sync import STRATEGIES, make_strategy

    from .loop import SkipMemberMixin
    from .overlap import OVERLAP_MIXINS
    from .record import RECORD_MIXINS
    from .hsdp import HSDP_MIXINS
    from .sharded import SHARDED_MIXINS

    mixins = {**MIXINS, "dead-leak": DeadLeakMixin, "double-apply": DoubleApplyMixin,
              "skip-member": SkipMemberMixin, **RECORD_MIXINS, **SHARDED_MIXINS, **HSDP_MIXINS, **OVERLAP_MIXINS}

    def build(name, comm, backend, n_params, options=None):
        if mutant in RINGS:
            return RINGS[mutant]()(comm, backend, n_params, options)
        if mutant not in mixins:
            return make_strategy(name, comm, backend, n_params, options)
        base = STRATEGIES[name]
        cls = type(f"{mixins[mutant].__name__}{base.__name__}", (mixins[mutant], base),
                   {"nominal_batch": batch_size})
        return cls(comm, backend, n_params, options)

    return build


# ---------------------------------------------------------------------------- the run's parts
def parts(mutant: str, config):
    """The :class:`~mpibench.job.parts.RunParts` that plant ``mutant`` in a run of ``config``
    (ValueError: no such mutant).

    A trainer whose strategy factory builds the mutant (and, for the loop mistakes, whose
    public loop hooks are overridden), and for ``stale-rejoin`` a recovery whose hooks keep
    stale parameters.
    """
    from mpibench.engine.worker import Trainer
    from mpibench.job.parts import RunParts

    from .loop import LOOP_MUTANTS
    from .optimizer import OPTIMIZER_MUTANTS, plant
    from .record import RECORD_LOOP_MUTANTS
    from .sharded import NO_REFUSAL

    loop_mutants = {**LOOP_MUTANTS, **RECORD_LOOP_MUTANTS}
    if mutant not in MUTANTS:
        raise ValueError(f"unknown mutant {mutant!r} (choose from {', '.join(MUTANTS)})")
    base = Trainer
    if mutant in loop_mutants:  # a mistake in the loop itself: its hook overridden
        base = type(f"{loop_mutants[mutant].__name__}Trainer", (loop_mutants[mutant], base), {})

    class MutantTrainer(base):
        def __init__(self, config, *args, **kw):
            kw["strategy_factory"] = strategy_factory(mutant, config.batch_size)
            super().__init__(config, *args, **kw)
            if mutant in OPTIMIZER_MUTANTS:  # a mistake in the optimizer: its state replaced
                plant(self, mutant)

    return RunParts(trainer=MutantTrainer,
                    recovery=stale_rejoin_recovery() if mutant == "stale-rejoin" else None,
                    refuse=mutant not in NO_REFUSAL)
