"""The alpha-beta-gamma cost model of the collectives and of a training step.

A message of ``n`` bytes costs ``alpha + n*beta``; reducing ``n`` bytes
locally costs ``n*gamma``. From these (calibrated in the same run, see
:mod:`.calibrate`) the model predicts the time of one gradient
synchronisation per strategy and of one training step, hence the step time
and speedup for p = 1..P. It predicts; it never measures. Every figure it
gives carries the assumptions below, which are data and are printed next to
each modelled number.
"""
from __future__ import annotations

import math

from mpibench.sync.ring import busbw_factor
from mpibench.sync.zero_ring import collective_busbw_factor

from .calibration import Calibration

ASSUMPTIONS = (
    "one core per rank (no time-sharing between ranks)",
    "no overlap of computation and communication",
    "collectives benchmarked back to back use the back-to-back ping-pong alpha and beta, a training "
    "step the alpha and beta of an exchange (both ranks send and receive at once) whose ranks compute a "
    "local step before each, by size band",
    "uniform links: every pair of ranks has the same alpha and beta (one host, shared memory)",
    "no stragglers: every rank arrives at the synchronisation at the same time",
    "a rank sends or receives one message at a time on its link (full duplex)",
    "ring: reduce-scatter then allgather over p segments per bucket",
    "PS: the k servers are among the workers and a rank's own piece never travels",
    "native: recursive doubling up to 10 KiB, reduce-scatter + allgather above",
    "rd: log2 q whole-buffer rounds, rabenseifner: 2 log2 q rounds moving 2(q-1)/q of the buffer, both "
    "folding a non-power-of-two p onto q = 2^floor(log2 p) with one whole-buffer message in and one out",
    "hier: binomial reduce and broadcast inside a node (all ranks on one node unless ranks_per_node is "
    "given), the leaders' all-reduce across nodes",
    "auto: the cheaper of rd and rabenseifner per bucket",
    "a step = the same step's local work on one rank (the worker loop on MPI.COMM_SELF at the same "
    "local batch, so p = 1 re-measures it) + gradient sync + loss-statistics allgather",
    "on one rank a collective costs its software call overhead (calibrated on MPI.COMM_SELF)",
    "the one-rank step is calibrated under the point's own strategy, interleaved with the point's "
    "measurements, on each of its p ranks at once (the local work shares the host as it does in the "
    "step), and a step on p ranks "
    "also pays the evidence gather to rank 0 (log2 p latencies, like the loss statistics)",
)
NATIVE_SMALL_BYTES = 10 << 10


def assumptions_text() -> str:
    return "; ".join(ASSUMPTIONS)


# ----------------------------------------------------------------------------- collectives
def ring_s(cal: Calibration, p: int, nbytes: float, buckets: int = 1) -> float:
    """2(p-1)a + 2((p-1)/p) n b + ((p-1)/p) n g, with the latency paid per bucket."""
    if p <= 1:
        return cal.call_overhead_s
    share = (p - 1) / p
    return (2 * (p - 1) * buckets * cal.alpha_s + 2 * share * nbytes * cal.beta_s_per_byte
            + share * nbytes * cal.gamma_s_per_byte(nbytes))


def ps_s(cal: Calibration, p: int, nbytes: float, shards: int = 1) -> float:
    """PS with ``shards`` servers: each receives p-1 pieces of n/k, reduces, returns them.

    The busiest link is a server's (p-1 pieces of n/k in and out) or a
    worker's (k-1 remote pieces of n/k out and back), whichever moves more.
    """
    if p <= 1:
        return cal.call_overhead_s
    k = max(1, min(shards, p))
    piece = nbytes / k
    moved = max(p - 1, k - 1) * piece
    return (2 * (p - 1) * cal.alpha_s + 2 * moved * cal.beta_s_per_byte
            + (p - 1) * piece * cal.gamma_s_per_byte(piece))


def native_s(cal: Calibration, p: int, nbytes: float) -> float:
    """MPI's own allreduce, modelled by the algorithms Open MPI picks by size."""
    if p <= 1:
        return cal.call_overhead_s
    rounds = math.ceil(math.log2(p))
    if nbytes <= NATIVE_SMALL_BYTES:
        return rounds * (cal.alpha_s + nbytes * cal.beta_s_per_byte + nbytes * cal.gamma_s_per_byte(nbytes))
    share = (p - 1) / p
    return (2 * rounds * cal.alpha_s + 2 * share * nbytes * cal.beta_s_per_byte
            + share * nbytes * cal.gamma_s_per_byte(nbytes))


def message_bytes(strategy: str, p: int, nbytes: float, options: dict | None = None) -> float:
    """The size of the messages a strategy sends for ``nbytes`` on ``p`` ranks, which picks the
    alpha-beta band: a ring's segment of a bucket, a PS piece, Open MPI's whole buffer below
    its switch and a 1/p share above, rd's whole buffer, rabenseifner's largest half."""
    options = options or {}
    if p <= 1:
        return nbytes
    if strategy == "ring":
        return min(nbytes, options.get("bucket_bytes") or nbytes) / p
    if strategy == "ps":
        return nbytes / max(1, min(options.get("ps_shards") or p, p))
    if strategy in ("native", "blocking", "c_floor", "anchor"):
        return nbytes if nbytes <= NATIVE_SMALL_BYTES else nbytes / p
    if strategy in ("rd", "hier"):
        return nbytes
    return nbytes / 2 if strategy == "rabenseifner" else nbytes / p


def band_of(cal: Calibration, strategy: str, p: int, nbytes: float, options: dict | None = None) -> str:
    """Which alpha-beta band the model used for this collective (see :func:`message_bytes`)."""
    name, alpha, beta = cal.band(message_bytes(strategy, p, nbytes, options))
    return f"{name} (alpha {alpha * 1e6:.3g} us, beta {beta * 1e9:.3g} ns/B)"


def sync_s(cal: Calibration, strategy: str, p: int, nbytes: float, options: dict | None = None) -> float:
    """Predicted time of one synchronisation of ``nbytes`` over ``p`` ranks (alpha and beta
    from the band of the strategy's message size, when calibrated by band)."""
    options = options or {}
    cal = cal.in_band(message_bytes(strategy, p, nbytes, options))
    if strategy == "ring":
        bucket = options.get("bucket_bytes") or nbytes
        return ring_s(cal, p, nbytes, max(1, math.ceil(nbytes / max(bucket, 1))))
    if strategy == "ps":
        shards = options.get("ps_shards") or p  # 0: one shard per member
        return ps_s(cal, p, nbytes, shards)
    if strategy in ("native", "blocking", "c_floor", "anchor"):  # MPI's own allreduce, however it is called
        return native_s(cal, p, nbytes)
    # Every other strategy (rd, rabenseifner, hier, auto, plugins) keeps its cost beside its code.
    from mpibench.sync.registry import cost_function

    cost = cost_function(strategy)
    if cost is None:
        raise ValueError(f"no cost model for strategy {strategy!r}")
    return cost(cal, p, nbytes, options)


def latency_share(cal: Calibration, strategy: str, p: int, nbytes: float, options=None) -> float:
    """Fraction of the predicted sync time spent on alpha terms (1.0: latency-bound)."""
    total = sync_s(cal, strategy, p, nbytes, options)
    if total <= 0:
        return 0.0
    no_alpha = Calibration(**{**cal.as_dict(), "alpha_s": 0.0})
    return max(0.0, 1.0 - sync_s(no_alpha, strategy, p, nbytes, options) / total)


def bandwidths_gbps(strategy: str, p: int, nbytes: float, time_s: float) -> tuple[float | None, float | None]:
    """algbw = bytes/time; busbw = algbw * 2(p-1)/p, as nccl-tests reports all-reduce, and
    algbw * (p-1)/p for a sharded strategy's reduce-scatter or all-gather row (``NAME:PART``).

    None at p = 1: nothing travels, so a size over a time is no bandwidth."""
    if p <= 1:
        return None, None
    if time_s <= 0:
        return 0.0, 0.0
    algbw = nbytes / time_s / 1e9
    part = strategy.rpartition(":")[2] in ("reduce-scatter", "all-gather")
    return algbw, algbw * (collective_busbw_factor(p) if part else busbw_factor(p))


# ----------------------------------------------------------------------------- training step
def step_s(cal: Calibration, strategy: str, p: int, local_batch: float, nbytes: float,
           options: dict | None = None, wait_s: float = 0.0) -> float:
    """Predicted time of one training step on ``p`` ranks; ``wait_s``: the wait for the
    last rank to arrive at the sync, where one was measured beside the point (none at p = 1;
    without one, the ranks are taken to arrive at once)."""
    cal = cal.in_step()  # messages in a step leave straight after computing
    loss_stats = math.ceil(math.log2(p)) * cal.alpha_s if p > 1 else cal.call_overhead_s
    # The step timer also covers the evidence gather to rank 0 (a small message per rank,
    # a tree of log2(p) latencies); on one rank it is inside the calibrated loop already.
    evidence = math.ceil(math.log2(p)) * cal.alpha_s if p > 1 else 0.0
    return (cal.local_step_s(local_batch, strategy) + sync_s(cal, strategy, p, nbytes, options)
            + loss_stats + evidence + (wait_s if p > 1 else 0.0))


def agreement_s(cal: Calibration, p: int) -> float:
    """The commit agreement on ``p`` ranks, a collective of its own: the calibrated one-rank
    figure at p = 1, else the figure calibrated on ``cal.ranks`` ranks scaled by the depth of a
    binary tree, ceil(log2 p) / ceil(log2 ranks)."""
    if p <= 1:
        return cal.agree_self_s
    if cal.ranks <= 1:
        return cal.agree_s
    return cal.agree_s * math.ceil(math.log2(p)) / math.ceil(math.log2(cal.ranks))


STEP_PARTS = ("compute_s", "reduction_s", "commit_s", "evidence_s", "check_s", "wait_s")


def step_parts(cal: Calibration, strategy: str, p: int, nbytes: float, beside: dict,
               options: dict | None = None, agrees: bool = True) -> dict:
    """The modelled step, part by part (seconds; ``STEP_PARTS``).

    compute, evidence and check: the one-rank loop's own parts measured beside the
    point (``beside``; none without it); reduction: the strategy's modelled sync with
    the after-compute alpha and beta, plus the sync's local work (pack, apply) from the
    one-rank loop's sync less its one-rank collective (``beside["reduction_s"]``); commit: :func:`agreement_s` when the run ``agrees``
    on every commit (a fault schedule's recovery does; a fault-free run commits without a
    protocol, so zero); wait for the last rank: the spread of the ranks' local work in
    the one-rank loops run at once beside the point (``beside["wait_s"]``), zero at p = 1."""
    parts = {k: beside.get(k) for k in ("compute_s", "evidence_s", "check_s")}
    local = beside.get("reduction_s")
    local = max(float(local) - cal.call_overhead_s, 0.0) if local is not None and local == local else 0.0
    parts["reduction_s"] = local + sync_s(cal.in_step(), strategy, p, nbytes, options)
    parts["commit_s"] = agreement_s(cal, p) if agrees else 0.0
    wait = beside.get("wait_s")
    parts["wait_s"] = float(wait) if p > 1 and wait is not None and wait == wait else 0.0
    return {k: parts[k] for k in STEP_PARTS}


def speedup(cal: Calibration, strategy: str, p: int, nbytes: float, mode: str,
            batch: int, options: dict | None = None) -> float:
    """Predicted speedup over one rank.

    strong: a global batch of ``batch`` samples split over p ranks, speedup t(1)/t(p);
    weak: ``batch`` samples per rank, speedup in samples per second, p t(1)/t(p).
    """
    local = batch / p if mode == "strong" else batch
    one = step_s(cal, strategy, 1, batch, nbytes, options)
    many = step_s(cal, strategy, p, local, nbytes, options)
    return one / many if mode == "strong" else p * one / many
