"""Worlds of thousands of ranks: each strategy's message rounds played out on a platform.

Running the worker loop itself for p = 4096 simulated processes would take
hours in Python, so at scale the simulation plays out what the strategies
send instead: each strategy is a sequence of *rounds*, each round a set of
messages (source rank, destination rank, bytes) that the strategy's code
sends at the same time (the ring's neighbour exchanges, the parameter
server's shifted all-to-all, recursive doubling's and halving's partner
swaps). Ranks sit on nodes in rank order (``ranks_per_node``). A round takes
as long as its slowest part: a message between two ranks of one node pays
the node's latency and bandwidth; the messages leaving (or entering) one
node share its NIC, which the round waits for, with the network's latency on
top (a fat tree: no link beyond the NICs is shared). Rounds that repeat one
pattern (the ring's 2(p-1) steps) are evaluated once and counted. Local
reduction adds gamma per byte reduced. This is where simulated figures
differ from the analytic model (:mod:`mpibench.results.costmodel`), which
charges every message the same alpha and beta and knows no NIC sharing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .platform import Platform


@dataclass(frozen=True)
class Round:
    src: np.ndarray
    dst: np.ndarray
    nbytes: float  # per message
    times: int = 1  # how often this same pattern repeats
    reduced_bytes: float = 0.0  # bytes each rank reduces after it


def round_s(plat: Platform, r: Round) -> float:
    if len(r.src) == 0:
        return 0.0
    per = max(plat.ranks_per_node, 1)
    src_node, dst_node = r.src // per, r.dst // per
    inter = src_node != dst_node
    t = 0.0
    if (~inter).any():
        t = plat.node_latency_s + r.nbytes / plat.node_bytes_per_s
    if inter.any():
        out_load = np.bincount(src_node[inter]).max() * r.nbytes
        in_load = np.bincount(dst_node[inter]).max() * r.nbytes
        t = max(t, plat.net_latency_s + max(out_load, in_load) / plat.net_bytes_per_s)
    return (t + r.reduced_bytes / plat.gamma_bytes_per_s) * r.times


def ring_rounds(p: int, n: float) -> list[Round]:
    ranks = np.arange(p)
    piece = n / p
    return [Round(ranks, (ranks + 1) % p, piece, p - 1, piece),  # reduce-scatter
            Round(ranks, (ranks + 1) % p, piece, p - 1)]  # all-gather


def ps_rounds(p: int, n: float) -> list[Round]:
    """Every worker pushes each server its shard (n/p), servers reduce and send it back."""
    ranks = np.arange(p)
    piece = n / p
    push = [Round(ranks, (ranks + k) % p, piece, 1, piece) for k in range(1, p)]
    pull = [Round(ranks, (ranks + k) % p, piece) for k in range(1, p)]
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
    q, evens, core = _fold(p)
    rounds = [Round(evens, evens + 1, n, 1, n)] if len(evens) else []
    steps = int(math.log2(q))
    for k in range(steps):  # halving: each round half the previous block
        partner = core[np.arange(q) ^ (1 << (steps - 1 - k))]
        rounds.append(Round(core, partner, n / 2 ** (k + 1), 1, n / 2 ** (k + 1)))
    for k in reversed(range(steps)):  # doubling back
        partner = core[np.arange(q) ^ (1 << (steps - 1 - k))]
        rounds.append(Round(core, partner, n / 2 ** (k + 1)))
    if len(evens):
        rounds.append(Round(evens + 1, evens, n))
    return rounds


PATTERNS = {"ring": ring_rounds, "ps": ps_rounds, "rd": rd_rounds, "rabenseifner": rabenseifner_rounds}


def sync_s(plat: Platform, strategy: str, p: int, nbytes: float) -> float:
    """Simulated time of one synchronisation; ``auto`` takes the faster of rd and rabenseifner,
    as it does by timing them; ``native`` is Open MPI's choice by size (rd small, rabenseifner large)."""
    if p <= 1:
        return 0.0
    if strategy == "auto":
        return min(sync_s(plat, "rd", p, nbytes), sync_s(plat, "rabenseifner", p, nbytes))
    if strategy == "native":
        return sync_s(plat, "rd" if nbytes <= 10 << 10 else "rabenseifner", p, nbytes)
    return sum(round_s(plat, r) for r in PATTERNS[strategy](p, nbytes))


def tree_s(plat: Platform, p: int, nbytes: float = 64.0) -> float:
    """A binomial tree of small messages (agreements, barriers, the evidence gather)."""
    if p <= 1:
        return 0.0
    per = max(plat.ranks_per_node, 1)
    latency = plat.net_latency_s if p > per else plat.node_latency_s
    bw = plat.net_bytes_per_s if p > per else plat.node_bytes_per_s
    return math.ceil(math.log2(p)) * (latency + nbytes / bw)


def recovery_s(plat: Platform, strategy: str, p: int, nbytes: float, notice_s: float) -> float:
    """A death and its recovery, as mpibench's protocol does it (faults/recovery.py): the failure
    notice, revoke, the failed attempt's commit agreement, then one recovery round (agree,
    shrink and its id gather, the reports' gather, agree, the new data communicator's split
    and settle barrier, agree), then the redone step's synchronisation on p - 1 ranks."""
    agreements = 4 * 2 * tree_s(plat, p)
    shrink = 2 * tree_s(plat, p) + tree_s(plat, p - 1)
    gathers = 2 * tree_s(plat, p - 1, 256.0)
    split = 3 * tree_s(plat, p - 1)
    return notice_s + tree_s(plat, p) + agreements + shrink + gathers + split + sync_s(plat, strategy, p - 1, nbytes)
