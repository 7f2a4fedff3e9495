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

from mpibench.sync.registry import cost_assumptions, cost_function, message_bytes
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
    "a step = the same step's local work on one rank (the worker loop on MPI.COMM_SELF at the same "
    "local batch, so p = 1 re-measures it) + gradient sync + loss-statistics allgather",
    "on one rank a collective costs its software call overhead (calibrated on MPI.COMM_SELF)",
    "the one-rank step is calibrated under the point's own strategy, interleaved with the point's "
    "measurements, on each of its p ranks at once (the local work shares the host as it does in the "
    "step), and a step on p ranks "
    "also pays the evidence gather to rank 0 (log2 p latencies, like the loss statistics)",
) + cost_assumptions()  # then each strategy's own line, kept beside its cost_s


def assumptions_text() -> str:
    return "; ".join(ASSUMPTIONS)


# ----------------------------------------------------------------------------- collectives
def band_of(cal: Calibration, strategy: str, p: int, nbytes: float, options: dict | None = None) -> str:
    """Which alpha-beta band the model used for this collective (see :func:`message_bytes`)."""
    name, alpha, beta = cal.band(message_bytes(strategy, p, nbytes, options))
    return f"{name} (alpha {alpha * 1e6:.3g} us, beta {beta * 1e9:.3g} ns/B)"


def sync_s(cal: Calibration, strategy: str, p: int, nbytes: float, options: dict | None = None) -> float:
    """Predicted time of one synchronisation of ``nbytes`` over ``p`` ranks: the strategy's own
    ``cost_s`` (kept beside its code), with alpha and beta from the band of its message size
    when calibrated by band."""
    options = options or {}
    cost = cost_function(strategy)
    if cost is None:
        raise ValueError(f"no cost model for strategy {strategy!r}")
    return cost(cal.in_band(message_bytes(strategy, p, nbytes, options)), p, nbytes, options)


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
