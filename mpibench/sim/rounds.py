"""Worlds of thousands of ranks: each strategy's message rounds played out on a platform.

Running the worker loop itself for p = 4096 simulated processes would take
hours in Python, so at scale the simulation plays out what the strategies
send instead: each strategy is a sequence of *rounds* (its record's ``message_rounds``,
mpibench/sync/patterns.py), each round a set of
messages (source rank, destination rank, bytes) that the strategy's code
sends at the same time (the ring's neighbour exchanges, the parameter
server's shifted all-to-all, recursive doubling's and halving's partner
swaps). Ranks sit on nodes as the platform places them (``ranks_per_node``,
``placement``: in rank order, or dealt round the nodes). A round takes
as long as its slowest part: a message between two ranks of one node pays
the node's latency and bandwidth; the messages leaving (or entering) one
node share its NIC, which the round waits for, with the network's latency on
top (a fat tree: no link beyond the NICs is shared). Rounds that repeat one
pattern (the ring's 2(p-1) steps) are evaluated once and counted. Local
reduction adds gamma per byte reduced. Rounds run in lockstep: for the ring
that is exact, since its slowest link (the one into a node) is on the path of
every step. Checked against SMPI, which plays out every message on SimGrid's
flow-level model: ``lab/studies/smpi_crosscheck.py``. This is where simulated figures
differ from the analytic model (:mod:`mpibench.results.costmodel`), which
charges every message the same alpha and beta and knows no NIC sharing.
"""
from __future__ import annotations

import math

import numpy as np

from mpibench.sync.hier import SMALL_BUCKET_BYTES
from mpibench.sync.patterns import (Round, leaders_stage, on_ranks, ps_rounds,  # noqa: F401 - re-exported
                                    rabenseifner_rounds, rd_rounds, ring_rounds, tree_stage, with_broadcast,
                                    zero_halving_rounds)
from mpibench.sync.registry import BUILTIN, lookup

from .platform import FULL_BISECTION, Platform

_COUNTS: dict[tuple, tuple[int, bool, bool]] = {}  # (per node, placement, p, pattern) -> counts


def _counts(plat: Platform, r: Round, p: int) -> tuple[int, bool, bool]:
    """(most messages through one NIC one way, any message inside a node, any between nodes)."""
    key = (plat.ranks_per_node, plat.placement, p, r.pattern)
    if r.pattern is not None and key in _COUNTS:
        return _COUNTS[key]
    src_node, dst_node = plat.node_of(r.src, p), plat.node_of(r.dst, p)
    inter = src_node != dst_node
    most = int(max(np.bincount(src_node[inter]).max(), np.bincount(dst_node[inter]).max())) if inter.any() else 0
    found = (most, bool((~inter).any()), bool(inter.any()))
    if r.pattern is not None:
        if len(_COUNTS) > 100_000:  # bounded: a long session predicting many p
            _COUNTS.clear()
        _COUNTS[key] = found
    return found


def nic_load_bytes(plat: Platform, r: Round, p: int) -> float:
    """The bytes the busiest NIC carries one way in one instance of the round."""
    return _counts(plat, r, p)[0] * r.nbytes


def _link_s(plat: Platform, latency_s: float, bytes_per_s: float, nbytes: float, messages: int = 1) -> float:
    """One message over one link, with what the library adds: its size-dependent latency and
    bandwidth factors (SMPI's), the rendezvous handshake above the eager limit, and the
    per-message software overhead on each side."""
    lat_s = latency_s * plat.latency_factor(nbytes)
    handshake_s = 2 * lat_s if nbytes > plat.eager_limit_bytes else 0.0
    return lat_s + handshake_s + messages * nbytes / (bytes_per_s * plat.bandwidth_factor(nbytes)) + 2 * plat.overhead_s


def round_parts(plat: Platform, r: Round, p: int) -> tuple[float, float]:
    """(messages, local reduction) seconds of every repetition of the round."""
    if len(r.src) == 0:
        return 0.0, 0.0
    most, intra, inter = _counts(plat, r, p)
    t = _link_s(plat, plat.node_latency_s, plat.node_bytes_per_s, r.nbytes) if intra else 0.0
    if inter:
        t = max(t, _link_s(plat, plat.net_latency_s, plat.net_bytes_per_s, r.nbytes, most))
    reduce_s = r.reduced_bytes / plat.gamma_bytes_per_s if plat.reduction_compute else 0.0
    return t * r.times, reduce_s * r.times


def round_s(plat: Platform, r: Round, p: int) -> float:
    network_s, reduce_s = round_parts(plat, r, p)
    return network_s + reduce_s


def nodes_of(plat: Platform, p: int) -> list[np.ndarray]:
    """Every node's ranks, ascending; nodes ordered by their lowest rank (hier's leaders)."""
    node = plat.node_of(np.arange(p), p)
    groups = [np.flatnonzero(node == k) for k in np.unique(node)]
    return sorted(groups, key=lambda g: int(g[0]))


HIER_SMALL_BYTES = SMALL_BUCKET_BYTES  # hier-pipelined's leaders, as hier's: rd up to here
# hier-pipelined's segment, fixed in bytes as a library's is (not fitted per platform or size):
# HCOLL does not state its shared-memory fragment size, so this is Open MPI coll/sm's default
# fragment_size, the figure of another library that reduces through shared memory in fragments.
SEGMENT_BYTES = 8 << 10
# Predicted, never run: no class in mpibench/sync, so ``run`` refuses these names.
MODELLED_ONLY = ("hier-pipelined",)


def segments(n: float) -> int:
    """How many segments hier-pipelined cuts ``n`` bytes into (at least one)."""
    return max(1, math.ceil(n / SEGMENT_BYTES))


def _chain_stage(nodes: list[np.ndarray], n: float) -> list[Round]:
    """A segmented reduce up a chain of each node's ranks (position i to i - 1): segment k leaves
    the chain's end at step k, so the node's L ranks take L - 1 + S - 1 steps of n / S bytes
    (every link counted busy in each, as rounds run in lockstep)."""
    widest = max(len(g) for g in nodes)
    if widest < 2:
        return []
    src = np.concatenate([g[1:] for g in nodes])
    dst = np.concatenate([g[:-1] for g in nodes])
    piece = n / segments(n)
    return [Round(src, dst, piece, widest - 2 + segments(n), piece)]


def _stage_s(plat: Platform, stage: list[Round], p: int) -> float:
    return sum(round_s(plat, r, p) for r in with_broadcast(stage, []))


def pipelines(plat: Platform, p: int, n: float) -> bool:
    """Whether hier-pipelined's node stage is the segmented chain, else hier's tree: the faster of
    the two, as a library switches by size (for small buffers the chain's L - 1 fill steps cost
    more than the tree's log2 L)."""
    nodes = nodes_of(plat, p)
    chain = _chain_stage(nodes, n)
    return bool(chain) and _stage_s(plat, chain, p) < _stage_s(plat, tree_stage(nodes, n), p)


def hier_pipelined_rounds(plat: Platform, p: int, n: float) -> list[Round]:
    """Modelled only (HCOLL-like): hier with the node stage a segmented chain, reduce up and
    broadcast down, where that is faster than hier's binomial tree; the same leaders' stage."""
    nodes = nodes_of(plat, p)
    stage = _chain_stage(nodes, n) if pipelines(plat, p, n) else tree_stage(nodes, n)
    return with_broadcast(stage, leaders_stage(nodes, n, HIER_SMALL_BYTES))


MODELLED = {"hier-pipelined": hier_pipelined_rounds}  # the MODELLED_ONLY names' rounds
# Every built-in the model can price: its own rounds, or strategies that stand for it.
STRATEGIES = (*(name for name, cls in BUILTIN.items()
                 if cls.message_rounds(2, 1.0, [np.arange(2)] if cls.topology_aware else None) is not None
                 or cls.modelled_as(1.0)), *MODELLED_ONLY)


def _record(strategy: str):
    return lookup(strategy).cls


def strategy_rounds(plat: Platform, strategy: str, p: int, nbytes: float) -> list[Round]:
    """The rounds of ``strategy`` itself (its record's ``message_rounds``, a plugin's too)."""
    if strategy in MODELLED:
        return MODELLED[strategy](plat, p, nbytes)
    record = _record(strategy)
    # only a strategy laid out by node reads the nodes: working them out costs O(p) per call
    found = record.message_rounds(p, nbytes, nodes_of(plat, p) if record.topology_aware else None)
    if found is None:
        raise ValueError(f"{strategy} has no message rounds of its own (see SyncStrategy.message_rounds)")
    return found


def resolve(plat: Platform, strategy: str, p: int, nbytes: float) -> str:
    """The algorithm that runs: the strategy itself, or the fastest of those its record says stand
    for it (``auto``'s candidates, as it finds by timing them; ``native``: Open MPI's by size)."""
    if strategy in MODELLED:
        return strategy
    stand_ins = _record(strategy).modelled_as(nbytes)
    if not stand_ins:
        return strategy
    return min(stand_ins, key=lambda s: sync_s(plat, s, p, nbytes))


def sync_s(plat: Platform, strategy: str, p: int, nbytes: float) -> float:
    """Simulated time of one synchronisation (``auto``, ``native``: see :func:`resolve`)."""
    if p <= 1:
        return 0.0
    name = resolve(plat, strategy, p, nbytes)
    return sum(round_s(plat, r, p) for r in strategy_rounds(plat, name, p, nbytes))


def reduction_s(plat: Platform, strategy: str, p: int, nbytes: float) -> float:
    """The part of :func:`sync_s` spent reducing locally (0 when the platform leaves it out)."""
    if p <= 1:
        return 0.0
    name = resolve(plat, strategy, p, nbytes)
    return sum(round_parts(plat, r, p)[1] for r in strategy_rounds(plat, name, p, nbytes))


def notes(plat: Platform, strategy: str, p: int, nbytes: float) -> list[str]:
    """Plain sentences on what shapes the figure: a topology predicted as full bisection, which
    library each hier variant stands for where their node stages differ, and an algorithm whose
    largest messages go through a NIC several at once (rank order against placement), when moving
    those bytes through the NIC is at least a quarter of the time."""
    out = []
    if plat.topology not in FULL_BISECTION and p > max(plat.ranks_per_node, 1):
        out.append(f"{plat.topology}: links beyond the NICs are not modelled (predicted as full bisection)")
    total = sync_s(plat, strategy, p, nbytes)
    if p <= 1 or total <= 0:
        return out
    name = resolve(plat, strategy, p, nbytes)
    out += _hier_notes(plat, name, p, nbytes)
    rounds_ = [r for r in strategy_rounds(plat, name, p, nbytes) if len(r.src)]
    largest = max(r.nbytes for r in rounds_)
    big = [(r, nic_load_bytes(plat, r, p)) for r in rounds_ if r.nbytes == largest]
    big = [(r, load) for r, load in big if load > largest]
    share = sum(load / plat.net_bytes_per_s * r.times for r, load in big) / total
    if big and share >= 0.25:
        at_once = round(max(load for _, load in big) / largest)
        note = "" if name in MODELLED else _record(name).nic_note
        why = f"; {note}" if note else ""
        out.append(f"{name}: its largest messages ({largest:.0f} B) cross a NIC {at_once} at once "
                   f"({plat.placement} placement, {plat.ranks_per_node} ranks per node): "
                   f"{share:.0%} of the time{why}")
    return out


def _hier_notes(plat: Platform, name: str, p: int, nbytes: float) -> list[str]:
    """Where each hier variant is meant: hier runs (sync/hier.py, whole buffers in a tree);
    hier-pipelined stands for a library that segments inside the node and is never run."""
    widest = max(len(g) for g in nodes_of(plat, p))
    if not (name in MODELLED or _record(name).topology_aware) or widest < 2:
        return []
    chain = pipelines(plat, p, nbytes)
    if name == "hier-pipelined" and chain:
        return [f"hier-pipelined (modelled only, not runnable): a library that reduces inside a node in "
                f"segments through shared memory (HCOLL); node stage a chain of {widest} ranks, "
                f"{segments(nbytes)} segments of {nbytes / segments(nbytes):.0f} B"]
    if name == "hier-pipelined":
        return [f"hier-pipelined (modelled only, not runnable): node stage hier's binomial tree here "
                f"(a chain of {widest} ranks would take longer at this size)"]
    if chain:
        piped_s = sync_s(plat, "hier-pipelined", p, nbytes)
        return [f"hier: node stage a binomial tree of whole buffers, as sync/hier.py runs; a library that "
                f"segments inside a node (HCOLL) is hier-pipelined: {piped_s * 1e6:.4g} us here"]
    return []


def tree_s(plat: Platform, p: int, nbytes: float = 64.0) -> float:
    """A binomial tree of small messages (agreements, barriers, the evidence gather)."""
    if p <= 1:
        return 0.0
    per = max(plat.ranks_per_node, 1)
    latency = plat.net_latency_s if p > per else plat.node_latency_s
    bw = plat.net_bytes_per_s if p > per else plat.node_bytes_per_s
    return math.ceil(math.log2(p)) * (latency + nbytes / bw)


def recovery_s(plat: Platform, strategy: str, p: int, nbytes: float, notice_s: float) -> float:
    """A death and its recovery, as mpibench's protocol does it (mpibench/faults/recovery.py): the failure
    notice, revoke, the failed attempt's commit agreement, then one recovery round (agree,
    shrink and its id gather, the reports' gather, agree, the new data communicator's split
    and settle barrier, agree), then the redone step's synchronisation on p - 1 ranks."""
    agreements = 4 * 2 * tree_s(plat, p)
    shrink = 2 * tree_s(plat, p) + tree_s(plat, p - 1)
    gathers = 2 * tree_s(plat, p - 1, 256.0)
    split = 3 * tree_s(plat, p - 1)
    return notice_s + tree_s(plat, p) + agreements + shrink + gathers + split + sync_s(plat, strategy, p - 1, nbytes)
