"""All-reduce patterns as message rounds: who sends how many bytes to whom in each round and how
often the round repeats, for p ranks, before any platform is applied (timing them on a platform
is mpibench.sim.rounds' job). Each function mirrors the send order of a strategy in this
package, and each strategy names its own in ``message_rounds`` (sync/base.py): the simulator
and ``predict`` read a strategy's messages from its record. The node stages take the ranks of
each node (lowest first), as the platform places them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Round:
    src: np.ndarray
    dst: np.ndarray
    nbytes: float  # per message
    times: int = 1  # how often this same pattern repeats
    reduced_bytes: float = 0.0  # bytes each rank reduces after it
    pattern: tuple | None = None  # names src -> dst for p ranks, so its NIC counts are worked out once



def ring_rounds(p: int, n: float) -> list[Round]:
    ranks = np.arange(p)
    piece = n / p
    return [Round(ranks, (ranks + 1) % p, piece, p - 1, piece, ("shift", 1)),  # reduce-scatter
            Round(ranks, (ranks + 1) % p, piece, p - 1, 0.0, ("shift", 1))]  # all-gather


def ps_rounds(p: int, n: float) -> list[Round]:
    """Every worker pushes each server its shard (n/p), servers reduce and send it back."""
    ranks = np.arange(p)
    piece = n / p
    push = [Round(ranks, (ranks + k) % p, piece, 1, piece, ("shift", k)) for k in range(1, p)]
    pull = [Round(ranks, (ranks + k) % p, piece, 1, 0.0, ("shift", k)) for k in range(1, p)]
    return push + pull


def _fold(p: int) -> tuple[int, np.ndarray, np.ndarray]:
    """(core size q, the folded-out even ranks, the core's ranks in core order)."""
    q = 1 << (p.bit_length() - 1)
    extra = p - q
    evens = np.arange(0, 2 * extra, 2)
    core = np.concatenate([np.arange(1, 2 * extra, 2), np.arange(2 * extra, p)])
    return q, evens, core


def rd_rounds(p: int, n: float) -> list[Round]:
    q, evens, core = _fold(p)
    rounds = [Round(evens, evens + 1, n, 1, n)] if len(evens) else []
    for k in range(int(math.log2(q))):
        partner = core[np.arange(q) ^ (1 << k)]
        rounds.append(Round(core, partner, n, 1, n))
    if len(evens):
        rounds.append(Round(evens + 1, evens, n))
    return rounds


def rabenseifner_rounds(p: int, n: float) -> list[Round]:
    """Halving near partners first (``v ^ 1``, then ``v ^ 2``, ...), as sync/rabenseifner.py
    (:func:`mpibench.sync.plans.halving_steps`) and MPICH do: the largest halves stay between
    neighbouring ranks, on one node when ranks sit on nodes in rank order."""
    q, evens, core = _fold(p)
    rounds = [Round(evens, evens + 1, n, 1, n)] if len(evens) else []
    steps = int(math.log2(q))
    for k in range(steps):  # halving: each round half the previous block
        partner = core[np.arange(q) ^ (1 << k)]
        rounds.append(Round(core, partner, n / 2 ** (k + 1), 1, n / 2 ** (k + 1)))
    for k in reversed(range(steps)):  # doubling back
        partner = core[np.arange(q) ^ (1 << k)]
        rounds.append(Round(core, partner, n / 2 ** (k + 1)))
    if len(evens):
        rounds.append(Round(evens + 1, evens, n))
    return rounds


def zero_halving_rounds(p: int, n: float) -> list[Round]:
    """sync/zero_halving.py: Rabenseifner's rounds, but core rank v runs the halving as
    ``bit_reverse(v)`` so that it ends holding shard v; in real ranks its partners go far-first
    (``v ^ 2**(steps-1-k)``), so the largest halves cross the NICs whenever ranks fill nodes
    in order. The step of each rank's own shard is compute, left out like the reduction's."""
    q, evens, core = _fold(p)
    rounds = [Round(evens, evens + 1, n, 1, n)] if len(evens) else []
    steps = int(math.log2(q))
    for k in range(steps):  # reduce-scatter: far partner first
        partner = core[np.arange(q) ^ (1 << (steps - 1 - k))]
        rounds.append(Round(core, partner, n / 2 ** (k + 1), 1, n / 2 ** (k + 1)))
    for k in reversed(range(steps)):  # all-gather of the stepped shards, the way the sums came
        partner = core[np.arange(q) ^ (1 << (steps - 1 - k))]
        rounds.append(Round(core, partner, n / 2 ** (k + 1)))
    if len(evens):
        rounds.append(Round(evens + 1, evens, n))
    return rounds


def on_ranks(ranks: np.ndarray, rounds: list[Round]) -> list[Round]:
    """``rounds`` over positions 0..m-1 played by ``ranks`` (position i is rank ranks[i])."""
    return [Round(ranks[r.src], ranks[r.dst], r.nbytes, r.times, r.reduced_bytes) for r in rounds]


def tree_stage(nodes: list[np.ndarray], n: float) -> list[Round]:
    """The binomial reduce of whole buffers to each node's lowest rank, every node in the same rounds."""
    widest = max(len(g) for g in nodes)
    reduce = []
    mask = 1
    while mask < widest:  # position i with lowest set bit ``mask`` sends its partial sum to i - mask
        src = np.concatenate([g[mask::2 * mask] for g in nodes])
        dst = np.concatenate([g[0::2 * mask][:len(g[mask::2 * mask])] for g in nodes])
        reduce.append(Round(src, dst, n, 1, n))
        mask <<= 1
    return reduce


def leaders_stage(nodes: list[np.ndarray], n: float, small_bytes: float) -> list[Round]:
    """The all-reduce among each node's lowest rank: rd up to ``small_bytes``, Rabenseifner above."""
    leaders = np.array([int(g[0]) for g in nodes])
    inter = rd_rounds if n <= small_bytes else rabenseifner_rounds
    return on_ranks(leaders, inter(len(leaders), n)) if len(leaders) > 1 else []


def with_broadcast(reduce: list[Round], across: list[Round]) -> list[Round]:
    """The node reduce, the leaders' stage, then the reduce's messages reversed without reduction."""
    return reduce + across + [Round(r.dst, r.src, r.nbytes, r.times) for r in reversed(reduce)]


def hier_rounds(nodes: list[np.ndarray], n: float, small_bytes: float) -> list[Round]:
    """Binomial reduce to each node's lowest rank, the leaders' all-reduce, binomial broadcast back;
    every node's tree runs in the same rounds."""
    return with_broadcast(tree_stage(nodes, n), leaders_stage(nodes, n, small_bytes))
