"""What every in-job measurement shares: straight-line fits, an idle wait that
leaves the cores to the measuring ranks, the cores a rank may use, and BLAS
held to one thread."""
from __future__ import annotations

import os
import time

from mpi4py import MPI

from mpibench.base import stats
from mpibench.sync.comm import Comm

IDLE_POLL_S = 0.002


def idle_until_released(world: MPI.Comm) -> None:
    """Sleep (not spin) until every rank reaches this point."""
    request = world.Ibarrier()
    while not request.Test():
        time.sleep(IDLE_POLL_S)


def on_pair(world: MPI.Comm, measure) -> list:
    """``measure(comm, rank)`` on ranks 0 and 1 of ``world`` (``comm``: a deadline-bounded
    :class:`~mpibench.sync.comm.Comm` of the two), the other ranks asleep meanwhile; every rank
    gets rank 0's result, [] on one rank (collective over ``world``)."""
    if world.Get_size() < 2:
        return []
    rank = world.Get_rank()
    results = []
    if rank in (0, 1):
        pair = world.Split(0, rank)
        results = measure(Comm(pair, deadline_s=30.0), rank)
        pair.Free()
    else:
        world.Split(MPI.UNDEFINED, rank)
    idle_until_released(world)
    return world.bcast(results, root=0)


def cores_available() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def fit_alpha_beta(points) -> tuple[float, float]:
    """``t(n) = alpha + n*beta`` anchored at the smallest message (:func:`..base.stats.fit_anchored`).

    More robust on a noisy host than a free intercept, which one slow large-message
    point can drive below zero: here alpha stays within the smallest message's time."""
    return stats.fit_anchored(points)


def fit_line(xs, ys) -> tuple[float, float]:
    """Least-squares ``y = a + b x`` with both coefficients clipped at zero (the core's fit)."""
    return stats.fit_line(xs, ys)


def blas_one_thread():
    """A context holding BLAS to one thread (a no-op if threadpoolctl is missing)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def fit_bands(points, splits) -> tuple[int | None, list]:
    """``t(n) = alpha_b + n*beta_b`` per message-size band, the bands split where the data says.

    Tries every split in ``splits`` that leaves at least two sizes on each side,
    fits each side with :func:`fit_alpha_beta` and keeps the split with the least
    sum of squared relative errors (small messages count as much as large ones).
    Returns ``(split_bytes, [[upper_bytes or None, alpha, beta], ...])``; one band
    (split None) when no split leaves two sizes a side or none beats a single line."""
    points = sorted(points)

    def error(part, alpha, beta) -> float:
        return sum(((alpha + n * beta) / t - 1) ** 2 for n, t in part if t > 0)

    alpha, beta = fit_alpha_beta(points)
    best = (error(points, alpha, beta), None, [[None, alpha, beta]])
    for split in splits:
        low, high = [p for p in points if p[0] <= split], [p for p in points if p[0] > split]
        if len(low) < 2 or len(high) < 2:
            continue
        (a_low, b_low), (a_high, b_high) = fit_alpha_beta(low), fit_alpha_beta(high)
        total = error(low, a_low, b_low) + error(high, a_high, b_high)
        if total < best[0]:
            best = (total, split, [[split, a_low, b_low], [None, a_high, b_high]])
    return best[1], best[2]
