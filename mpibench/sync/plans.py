"""Pure planning for the logarithmic all-reduce algorithms: who talks to whom, about which blocks.

No MPI and no buffers here: every function maps ranks (positions in a
group) and block counts to plain tuples, so the plans can be checked for
any ``p`` and any length (``tests/test_sync_plans.py``) before an algorithm
moves a byte along them.

* :class:`Fold` turns ``p`` ranks into a power of two ``q`` (the largest not
  above ``p``) the way MPICH and Open MPI do: among the first ``2 * (p - q)``
  ranks each even rank hands its whole buffer to the odd rank after it and
  sits out; after the core algorithm the odd rank hands the result back.
* :func:`halving_steps` is the reduce-scatter by recursive halving over ``q``
  blocks: at each step a rank keeps one half of its current block range and
  sends the other half to its partner ``v ^ mask``, near partners first; it
  ends owning block :func:`owned_block` (``v`` bit-reversed).
  The all-gather by recursive doubling runs the same steps backwards.
* :func:`binomial_children` / :func:`binomial_parent` give the binomial tree
  rooted at group position 0 (reduce: children first, then the parent;
  broadcast: the reverse).
"""
from __future__ import annotations

from dataclasses import dataclass


def largest_power_of_two(p: int) -> int:
    """The largest power of two not above ``p`` (p >= 1)."""
    if p < 1:
        raise ValueError(f"a group needs at least one rank, got {p}")
    return 1 << (p.bit_length() - 1)


@dataclass(frozen=True)
class Fold:
    """The non-power-of-two fold of ``p`` ranks onto a core of ``q`` ranks."""

    p: int

    @property
    def core(self) -> int:
        return largest_power_of_two(self.p)

    @property
    def extra(self) -> int:
        return self.p - self.core

    def folded_out(self, rank: int) -> bool:
        """True for the even ranks among the first ``2 * extra``: they sit the core out."""
        return rank < 2 * self.extra and rank % 2 == 0

    def partner(self, rank: int) -> int | None:
        """The rank this one folds with (sends to / receives from), or None."""
        if rank >= 2 * self.extra:
            return None
        return rank + 1 if rank % 2 == 0 else rank - 1

    def core_rank(self, rank: int) -> int | None:
        """Position in the core of ``q`` ranks; None for a folded-out rank."""
        if self.folded_out(rank):
            return None
        return rank // 2 if rank < 2 * self.extra else rank - self.extra

    def rank_of(self, core_rank: int) -> int:
        """The group rank at core position ``core_rank``."""
        return 2 * core_rank + 1 if core_rank < self.extra else core_rank + self.extra


@dataclass(frozen=True)
class HalvingStep:
    """One step of recursive halving for one rank: block ranges as ``(first, end)``."""

    partner: int  # core rank
    keep: tuple[int, int]
    send: tuple[int, int]


def halving_steps(q: int, v: int) -> list[HalvingStep]:
    """Rank ``v``'s steps of the reduce-scatter by recursive halving over ``q`` blocks.

    ``q`` must be a power of two. Near partners first, as MPICH does: step
    ``k`` pairs ``v`` with ``v ^ 2**k``, so the largest halves travel between
    neighbouring ranks (on one node when ranks fill nodes in order) and only
    the small late ones between far ranks; far partners first would put every
    rank's largest half through the node's network link at once. Block
    range ``[0, q)`` halves each step and bit ``k`` of ``v`` picks the half
    kept, so rank ``v`` ends owning block ``bit_reverse(v)``
    (:func:`owned_block`).
    """
    if q < 1 or q & (q - 1):
        raise ValueError(f"recursive halving needs a power of two, got {q}")
    steps, lo, hi, mask = [], 0, q, 1
    while mask < q:
        mid = lo + (hi - lo) // 2
        lower, upper = (lo, mid), (mid, hi)
        keep, send = (upper, lower) if v & mask else (lower, upper)
        steps.append(HalvingStep(v ^ mask, keep, send))
        lo, hi = keep
        mask <<= 1
    return steps


def owned_block(q: int, v: int) -> int:
    """The block rank ``v`` owns after :func:`halving_steps`: ``v``'s bits reversed over log2 q."""
    width = q.bit_length() - 1
    return int(format(v, f"0{width}b")[::-1], 2) if width else 0


def doubling_partners(q: int, v: int) -> list[int]:
    """Rank ``v``'s partners, round by round, in recursive doubling over ``q`` ranks."""
    if q < 1 or q & (q - 1):
        raise ValueError(f"recursive doubling needs a power of two, got {q}")
    return [v ^ (1 << k) for k in range(q.bit_length() - 1)]


def binomial_children(m: int, i: int) -> list[int]:
    """Group positions that send to ``i`` in a binomial reduce to 0 over ``m`` ranks, in order."""
    children, mask = [], 1
    while mask < m:
        if i & mask:
            break
        if i + mask < m:
            children.append(i + mask)
        mask <<= 1
    return children


def binomial_parent(i: int) -> int | None:
    """The position ``i`` sends its partial sum to (clears its lowest set bit); None for the root."""
    return None if i == 0 else i - (i & -i)
