"""Interleaved rounds: every candidate of one size timed in turn, the order rotated.

Within a round each candidate runs ``iterations`` timed calls right after the
others, so all of them see the same machine load; the next round starts with
the next candidate. With ``t[r, k]`` the time of rank ``r`` in call ``k``, a
round gives each candidate (IMB's convention) ``t_max = mean_k max_r t[r, k]``
(every call lasts as long as its slowest rank), ``t_min = mean_k min_r`` and
``t_avg = mean_k mean_r``. Over the rounds a row reports the median of each,
the 90th percentile and the coefficient of variation of ``t_max``, and the
median over rounds of the per-round ratio to the blocking baseline (median of
pairs: both halves of a ratio come from the same round).

Every batch begins with ``warmup`` untimed calls of its own, run in the same
loop as the timed ones (nothing checked in between). The first calls after a
pause are the slowest of all: after another candidate's batch, the ranks'
sleep while an anchor runs as its own job, or a check, the first call of a
4 KiB batch took 10-200x the rest and the first two or three at 1-4 MiB
several times (cold caches and TLB, idle cores woken), and
IMB-MPI1 and OSU time only calls after their own warm-up inside the same
launch. Warmed only once per size, every batch after the first paid that
restart inside its figure (:mod:`benchmarks.vs_anchor` showed ``blocking``
1.6-1.9x IMB-MPI1's time in the same rounds).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI
from mpibench.base import stats


PROBE_CALLS = 10
MAX_CALLS_PER_ROUND = 20_000


@dataclass(frozen=True)
class RoundTimes:
    """One candidate's seconds per call in one round, over the ranks."""

    t_min: float
    t_avg: float
    t_max: float


@dataclass(frozen=True)
class Spread:
    """One candidate over all rounds of one size."""

    time_min_s: float  # medians over rounds
    time_avg_s: float
    time_max_s: float
    round_p90_s: float  # of t_max
    round_cv_pct: float  # of t_max
    t_max_by_round: tuple
    errors: int | None  # None: checked by an outside tool, not here


def over_ranks(mpi: MPI.Comm, times: np.ndarray) -> RoundTimes:
    """Combine every rank's per-call times (collective over ``mpi``)."""
    table = np.empty((mpi.Get_size(), len(times)), dtype=np.float64)
    mpi.Allgather(np.ascontiguousarray(times, dtype=np.float64), table)
    if table.size == 0:
        return RoundTimes(0.0, 0.0, 0.0)
    return RoundTimes(float(table.min(axis=0).mean()), float(table.mean()), float(table.max(axis=0).mean()))


def spread(rounds: list[RoundTimes], errors: int | None) -> Spread:
    t_max = np.array([r.t_max for r in rounds])
    mean = float(t_max.mean())
    cv = float(t_max.std(ddof=1) / mean * 100) if len(t_max) > 1 and mean > 0 else 0.0
    return Spread(stats.median([r.t_min for r in rounds]), stats.median([r.t_avg for r in rounds]),
                  stats.median(t_max), stats.percentile(t_max, 90), cv, tuple(t_max), errors)


def timed_round(mpi: MPI.Comm, candidate, calls: int, lead: int = 0) -> tuple[RoundTimes, int | None]:
    """One round of one candidate over the ranks: (times, wrong elements; None if not checked here).

    The batch runs ``lead + calls`` calls and keeps the times of the last ``calls``: the lead-in
    warms this batch up in the same loop. A candidate timed outside these processes (an anchor,
    which warms up inside its own launch) answers ``round_times`` itself."""
    if hasattr(candidate, "round_times"):
        return candidate.round_times(mpi, calls)
    timed = candidate.time_calls(lead + calls)
    return over_ranks(mpi, timed.times_s[lead:]), timed.wrong


def calls_per_round(mpi: MPI.Comm, probe, minimum: int, round_s: float) -> int:
    """At least ``minimum`` timed calls per batch, and with ``round_s`` above 0 enough that a
    batch of ``probe`` (the blocking baseline) lasts that long: a 4 KiB batch of 20 calls
    lasts 0.1 ms, so one descheduling of a rank decided its whole round. The estimate is
    the slowest rank's median call over a few probe calls, so every rank runs the same count."""
    if round_s <= 0:
        return minimum
    per_call = stats.median(probe.time_calls(PROBE_CALLS).times_s)
    slowest = mpi.allreduce(per_call, op=MPI.MAX)
    return int(min(MAX_CALLS_PER_ROUND, max(minimum, math.ceil(round_s / max(slowest, 1e-9)))))


def run_rounds(mpi: MPI.Comm, candidates: list, warmup: int, iterations: int, rounds: int) -> dict:
    """Warm every candidate up, then time ``rounds`` interleaved rounds: name -> :class:`Spread`.

    Every batch is led in by ``warmup`` untimed calls (see the module's note); an anchor
    warms up inside each of its own launches."""
    wrong = np.zeros(len(candidates), dtype=np.int64)
    checked = [not hasattr(c, "round_times") for c in candidates]
    for i, c in enumerate(candidates):
        if checked[i]:
            wrong[i] += c.time_calls(warmup).wrong
    per: list[list[RoundTimes]] = [[] for _ in candidates]
    for r in range(rounds):
        k = r % len(candidates)
        for i in list(range(k, len(candidates))) + list(range(k)):
            times, bad = timed_round(mpi, candidates[i], iterations, warmup)
            wrong[i] += bad or 0
            per[i].append(times)
    total = np.empty_like(wrong)
    mpi.Allreduce(wrong, total, op=MPI.SUM)
    return {c.name: spread(per[i], int(total[i]) if checked[i] else None) for i, c in enumerate(candidates)}


def ratio_to(base: Spread | None, other: Spread) -> float | None:
    """Median over rounds of base t_max / other t_max (> 1: ``other`` is faster)."""
    if base is None:
        return None
    pairs = [b / o for b, o in zip(base.t_max_by_round, other.t_max_by_round) if o > 0]
    return stats.median(pairs) if pairs else None
