"""Sharded data parallelism by recursive halving and doubling (ZeRO-2 style, logarithmic rounds).

The layout is :class:`~.sharding.ShardLayout` with ``q`` shards (``q`` the
largest power of two not above ``p``). A non-power of two is folded first,
as in :mod:`.rabenseifner`: among the first ``2 (p - q)`` ranks each even
rank hands its whole buffer to the odd rank after it and owns no shard. In
``log2 q`` halving steps each core rank keeps the half of its shard range
holding its own shard and adds its partner's copy of it, ending as the only
holder of the full sum (and total count) of shard ``v`` (its core position).
It alone steps that shard; ``log2 q`` doubling steps carry the stepped
parameters back the way the sums came, and a folded-out rank receives the
whole buffer from its partner.

Bandwidth-optimal like the ring with ``2 log2 q`` latencies instead of
``2 (p - 1)``. ``reduce`` on a plain buffer is the two collectives, an
all-reduce (what the benchmarks time).
"""
from __future__ import annotations

import math

from . import patterns, plans, segments, sharding
from .bucketed import fold_in, fold_out, views
from .rd import fold_cost_s
from .rounds import Round, compact

_TAG = 52


def halving_rounds(group: list[int], rank: int, buf, scratch, plan: segments.SegmentPlan) -> tuple[list, list]:
    """(fold + reduce-scatter by halving, all-gather by doubling + unfold) over one bucket;
    ``group`` lists communicator ranks by position, ``rank`` is this rank's position."""
    fold = plans.Fold(len(group))
    scatter = [fold_in(group, rank, fold, [buf], [scratch])]
    gather = []
    v = fold.core_rank(rank)
    if v is not None:
        # Core rank v must end on shard v (the owner map the history states and the checker
        # models): halving_steps halves near-first and ends rank u on block bit_reverse(u), so
        # each rank runs it as u = bit_reverse(v) and reaches its partner through the same
        # (self-inverse) reversal. In real ranks that is far partners first.
        steps = plans.halving_steps(fold.core, plans.owned_block(fold.core, v))

        def partner_of(step):
            return group[fold.rank_of(plans.owned_block(fold.core, step.partner))]

        for step in steps:
            peer = partner_of(step)
            rnd = Round((peer,))
            rnd.send(views(buf, plan, 0, *step.send), peer)
            rnd.recv(views(scratch, plan, 0, *step.keep), peer, into=views(buf, plan, 0, *step.keep))
            scatter.append(rnd)
        for step in reversed(steps):
            peer = partner_of(step)
            rnd = Round((peer,))
            rnd.send(views(buf, plan, 0, *step.keep), peer)
            rnd.recv(views(buf, plan, 0, *step.send), peer)
            gather.append(rnd)
    gather.append(fold_out(group, rank, fold, [buf]))
    return compact(scatter), compact(gather)


class ZeroHalving(sharding.ShardedStrategy):
    name = "zero-halving"
    sharding_kind = "halving-core"  # one shard per core rank of the power-of-two fold
    summary = "sharded (ZeRO-2): reduce-scatter by recursive halving, sharded step, all-gather by doubling"
    option_names = ()
    cost_assumption = "zero-halving: rabenseifner's halving and doubling with its fold, the step between them"
    nic_note = "zero-halving halves far partners first in rank order (each rank ends on its own shard)"

    @staticmethod
    def message_rounds(p: int, nbytes: float, nodes: list | None) -> list:
        return patterns.zero_halving_rounds(p, nbytes)
    tag = _TAG

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self.fold = plans.Fold(comm.size)
        self.layout = sharding.ShardLayout(n_params, self.fold.core)
        self.step_buffer = backend.zeros(self.layout.buffer_length)
        self._scratch = backend.empty(self.layout.buffer_length)
        self.group, position = sharding.by_worker_id(comm.worker_ids)
        self.position = position[comm.rank]  # positions in worker-id order own the shards
        self.rounds = halving_rounds(self.group, self.position, self.step_buffer, self._scratch, self.layout.plan())
        self._plain = None

    def owned_shard(self) -> int | None:
        """The shard this rank steps (its core position; None when folded out)."""
        return self.fold.core_rank(self.position)

    def owners(self) -> tuple[int, ...]:
        return tuple(self.comm.worker_ids[self.group[self.fold.rank_of(v)]] for v in range(self.fold.core))

    def _plain_rounds(self, buf):
        if self._plain is None or self._plain[0] is not buf:
            widths = segments.split_widths(len(buf), self.fold.core)
            plan = segments.SegmentPlan(segments.offsets_of(widths)[None, :], widths[None, :], len(buf))
            scratch = self.backend.empty(len(buf))
            self._plain = (buf, plan, *halving_rounds(self.group, self.position, buf, scratch, plan))
        return self._plain

    @staticmethod
    def part_cost_s(part: str, cal, p: int, nbytes: float) -> float:
        """Half the fold, log2(q) a + ((q-1)/q) n b, plus ((q-1)/q) n g for the reduce-scatter."""
        if p <= 1:
            return cal.call_overhead_s
        q = plans.largest_power_of_two(p)
        share = (q - 1) / q
        t = fold_cost_s(cal, p, nbytes, 1) / 2 + math.log2(q) * cal.alpha_s + share * nbytes * cal.beta_s_per_byte
        return t + (share * nbytes * cal.gamma_s_per_byte(nbytes) if part == "reduce-scatter" else 0.0)

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        """fold + 2 log2(q) a + 2((q-1)/q) n b + ((q-1)/q) n g (the fold as in rabenseifner)."""
        if p <= 1:
            return cal.call_overhead_s
        q = plans.largest_power_of_two(p)
        share = (q - 1) / q
        return (fold_cost_s(cal, p, nbytes, 1) + 2 * math.log2(q) * cal.alpha_s
                + 2 * share * nbytes * cal.beta_s_per_byte + share * nbytes * cal.gamma_s_per_byte(nbytes))
