"""Rabenseifner's all-reduce: reduce-scatter by recursive halving, all-gather by recursive doubling.

Each bucket is cut into ``q`` segments (``q`` the largest power of two not
above ``p``; widths may differ and may be zero, see :mod:`.segments`). In
``log2 q`` halving steps a rank sends half of its current segment range to
its partner and adds the partner's copy of the other half, ending as the
only owner of the full sum of one segment; ``log2 q`` doubling steps then
send the reduced ranges back the way they came, received straight into
place. Every segment is summed on exactly one rank and copied from there, so
all ranks end with the same bits. Non-powers of two are folded first, as in
:mod:`.rd`.

Bandwidth-optimal like the ring (each rank moves ``2 (q-1)/q`` of the
buffer) with ``2 log2 q`` instead of ``2 (p-1)`` latencies: what MPI
libraries use for long messages. Pieces: every segment of every bucket, by
global offset.
"""
from __future__ import annotations

import math

from . import patterns, plans, segments
from .bucketed import BucketedStrategy, Compiled, halving_doubling_rounds
from .rd import _buckets, fold_cost_s


class Rabenseifner(BucketedStrategy):
    name = "rabenseifner"
    summary = "reduce-scatter by recursive halving + all-gather by recursive doubling (fold for non-powers of two)"
    option_names = ("bucket_bytes",)
    tag = 41
    cost_assumption = "rabenseifner: 2 log2 q rounds moving 2(q-1)/q of the buffer, with rd's fold of a non-power-of-two p"

    @staticmethod
    def message_rounds(p: int, nbytes: float, nodes: list | None) -> list:
        return patterns.rabenseifner_rounds(p, nbytes)

    @staticmethod
    def message_bytes(p: int, nbytes: float, options: dict | None = None) -> float:
        return nbytes / 2  # the largest message: the first halving's half

    def compile(self, buf) -> Compiled:
        q = plans.largest_power_of_two(self.comm.size)
        plan = segments.bucket_plan(len(buf), self.bucket_elems, q)
        scratch = self.backend.empty(len(buf))
        valid = plan.covers()
        group = list(range(self.comm.size))
        rounds = halving_doubling_rounds(group, self.comm.rank, buf, scratch, plan) if valid else []
        return Compiled(buf, rounds, plan.pieces(), valid, self.name)

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        return rabenseifner_cost_s(cal, p, nbytes, _buckets(nbytes, options))


def rabenseifner_cost_s(cal, p: int, nbytes: float, buckets: int = 1) -> float:
    """fold + 2 log2(q) a + 2 ((q-1)/q) n b + ((q-1)/q) n g, the latency paid per bucket."""
    if p <= 1:
        return cal.call_overhead_s
    q = plans.largest_power_of_two(p)
    share = (q - 1) / q
    return (fold_cost_s(cal, p, nbytes, buckets) + 2 * math.log2(q) * buckets * cal.alpha_s
            + 2 * share * nbytes * cal.beta_s_per_byte + share * nbytes * cal.gamma_s_per_byte(nbytes))
