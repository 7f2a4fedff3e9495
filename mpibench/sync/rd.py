"""Recursive doubling: ceil(log2 p) rounds, each exchanging whole buckets with one partner.

In round ``k`` rank ``v`` swaps every bucket with ``v ^ 2**k`` and adds what
arrives; after ``log2 q`` rounds every rank holds the full sum. Both partners
add the same two operands (in the other order: IEEE addition is commutative),
so every rank ends with the same bits. A non-power-of-two ``p`` is folded
first (:class:`.plans.Fold`): each of the ``p - q`` extra ranks hands its
buffer to a neighbour before the core and gets the result back after it.

Few rounds, but every round moves the whole buffer: the latency-optimal
choice for short messages (what MPI libraries use below a few KiB).
Pieces: one per bucket, by global offset.
"""
from __future__ import annotations

import math

from . import patterns, plans, segments
from .bucketed import BucketedStrategy, Compiled, rd_rounds


class RecursiveDoubling(BucketedStrategy):
    name = "rd"
    summary = "recursive doubling: ceil(log2 p) rounds of whole-bucket swaps (fold for non-powers of two)"
    option_names = ("bucket_bytes",)
    tag = 31
    cost_assumption = ("rd: log2 q whole-buffer rounds, folding a non-power-of-two p onto q = 2^floor(log2 p) "
                       "with one whole-buffer message in and one out")

    @staticmethod
    def message_rounds(p: int, nbytes: float, nodes: list | None) -> list:
        return patterns.rd_rounds(p, nbytes)

    @staticmethod
    def message_bytes(p: int, nbytes: float, options: dict | None = None) -> float:
        return nbytes  # whole-buffer messages

    def compile(self, buf) -> Compiled:
        plan = segments.bucket_plan(len(buf), self.bucket_elems, 1)
        scratch = self.backend.empty(len(buf))
        buckets = [buf[o:o + n] for o, n in plan.pieces()]
        spaces = [scratch[o:o + n] for o, n in plan.pieces()]
        valid = plan.covers()
        rounds = rd_rounds(list(range(self.comm.size)), self.comm.rank, buckets, spaces) if valid else []
        return Compiled(buf, rounds, plan.pieces(), valid, self.name)

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        return rd_cost_s(cal, p, nbytes, _buckets(nbytes, options))


def _buckets(nbytes: float, options) -> int:
    bucket = (options or {}).get("bucket_bytes") or nbytes
    return max(1, math.ceil(nbytes / max(bucket, 1)))


def fold_cost_s(cal, p: int, nbytes: float, buckets: int = 1) -> float:
    """The fold of a non-power-of-two p: one whole-buffer message in, one add, one back."""
    if p & (p - 1) == 0:
        return 0.0
    return 2 * (buckets * cal.alpha_s + nbytes * cal.beta_s_per_byte) + nbytes * cal.gamma_s_per_byte(nbytes)


def rd_cost_s(cal, p: int, nbytes: float, buckets: int = 1) -> float:
    """fold + log2(q) (a + n b + n g), the latency paid per bucket."""
    if p <= 1:
        return cal.call_overhead_s
    rounds = plans.largest_power_of_two(p).bit_length() - 1
    return fold_cost_s(cal, p, nbytes, buckets) + rounds * (
        buckets * cal.alpha_s + nbytes * cal.beta_s_per_byte + nbytes * cal.gamma_s_per_byte(nbytes))
