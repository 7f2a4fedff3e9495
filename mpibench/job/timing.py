"""What every in-job measurement shares: straight-line fits, an idle wait that
leaves the cores to the measuring ranks, the cores a rank may use, and BLAS
held to one thread."""
from __future__ import annotations

import os
import time

import numpy as np
from mpi4py import MPI

IDLE_POLL_S = 0.002


def idle_until_released(world: MPI.Comm) -> None:
    """Sleep (not spin) until every rank reaches this point."""
    request = world.Ibarrier()
    while not request.Test():
        time.sleep(IDLE_POLL_S)


def cores_available() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def fit_alpha_beta(points) -> tuple[float, float]:
    """``t(n) = alpha + n*beta`` anchored at the smallest message: beta is the
    least-squares slope through that point (never negative), alpha the line's value at 0.

    More robust on a noisy host than a free intercept, which one slow large-message
    point can drive below zero: here alpha stays within the smallest message's time."""
    sizes, times = (np.asarray(v, float) for v in zip(*sorted(points)))
    dx, dt = sizes - sizes[0], times - times[0]
    beta = max(float(np.dot(dx, dt) / np.dot(dx, dx)), 0.0) if np.dot(dx, dx) > 0 else 0.0
    return max(float(times[0] - beta * sizes[0]), 0.0), beta


def fit_line(xs, ys) -> tuple[float, float]:
    """Least-squares ``y = a + b x`` with both coefficients clipped at zero."""
    slope, intercept = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return max(float(intercept), 0.0), max(float(slope), 0.0)


def blas_one_thread():
    """A context holding BLAS to one thread (a no-op if threadpoolctl is missing)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")
