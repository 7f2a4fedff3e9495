"""The statistics core: medians, the median's order-statistic interval, ratios with intervals, line fits.

Every figure the product reports over repetitions goes through here, so the
same values always give the same figure whichever command computed it
(``bench``'s rows, the medians over launches, calibration, scaling, the step
comparison). The checker (``mpibench/check/``) keeps its own arithmetic: it
imports nothing of production.

Empty input, stated once: :func:`median` of no values is NaN (as NumPy's, but
without its warning), :func:`median_or_none` is None, :func:`median_interval`
of no finite values is an all-NaN :class:`Interval` with ``n = 0``, and
:func:`order_ranks` refuses ``n < 1`` with ``ValueError``. One value is its own
median and its own interval, with coverage 0 (no interval of one value has
any).

The interval of a median is ``[x_(j), x_(n+1-j)]`` with ``j`` the largest rank
whose coverage ``1 - 2 * P(Binomial(n, 1/2) < j)`` still reaches the confidence:
distribution-free, with exact coverage. Below six values no 95 % interval
exists and the interval is the full range with its lower coverage.

A paired ratio (:func:`paired_ratio`) is the median of the per-pair ratios
with that interval; two independent samples' ratio (:func:`shift_ratio`) is the
Hodges-Lehmann estimate on the log scale with the interval the exact
Mann-Whitney test does not reject.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95


def median(values, axis=None):
    """The median of ``values`` (float; along ``axis`` an array); NaN for no values."""
    x = np.asarray(values, dtype=float)
    if axis is not None:
        return np.median(x, axis=axis)
    return float(np.median(x)) if x.size else math.nan


def median_or_none(values) -> float | None:
    """The median of the values that are not None; None when none is."""
    known = [v for v in values if v is not None]
    return float(np.median(known)) if known else None


def percentile(values, q: float) -> float:
    """The ``q``-th percentile (NumPy's linear interpolation); NaN for no values."""
    x = np.asarray(values, dtype=float)
    return float(np.percentile(x, q)) if x.size else math.nan


@dataclass(frozen=True)
class Interval:
    """A median over ``n`` values with a distribution-free interval of coverage ``coverage``."""

    median: float
    low: float
    high: float
    n: int
    coverage: float  # the interval's exact coverage (>= the confidence asked when n allows)

    @property
    def half_width_pct(self) -> float:
        """Half the interval's width, in percent of the median (the noise a verdict can resolve)."""
        if not self.median:
            return math.nan
        return (self.high - self.low) / 2 / abs(self.median) * 100


def _below_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), exactly (integers: no SciPy import for every process)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


def order_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, float]:
    """(j, coverage): the 1-based rank ``j`` of the interval's ends ``x_(j)``, ``x_(n+1-j)``."""
    if n < 1:
        raise ValueError("no values")
    best_j, best_cov = 1, 1.0 - 2.0 * _below_half(0, n)
    for j in range(2, (n + 1) // 2 + 1):
        coverage = 1.0 - 2.0 * _below_half(j - 1, n)
        if coverage < confidence:
            break
        best_j, best_cov = j, coverage
    return best_j, float(min(1.0, max(0.0, best_cov))) if n > 1 else 0.0


def median_interval(values, confidence: float = CONFIDENCE) -> Interval:
    """The median of the finite ``values`` (None dropped) and its order-statistic interval."""
    x = np.sort(np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float))
    if x.size == 0:
        return Interval(math.nan, math.nan, math.nan, 0, 0.0)
    j, coverage = order_ranks(x.size, confidence)
    return Interval(float(np.median(x)), float(x[j - 1]), float(x[x.size - j]), int(x.size), coverage)


def paired_ratio(numerators, denominators, confidence: float = CONFIDENCE) -> Interval:
    """The median over pairs of ``numerator / denominator`` with its order-statistic interval
    (pairs with a missing, non-finite or zero denominator are left out)."""
    ratios = [a / b for a, b in zip(numerators, denominators)
              if a is not None and b is not None and np.isfinite(a) and np.isfinite(b) and b]
    return median_interval(ratios, confidence)


@dataclass(frozen=True)
class ShiftRatio:
    """B over A from two independent samples: the estimate and its interval."""

    ratio: float
    low: float
    high: float
    a_n: int
    b_n: int
    log_low: float = math.nan  # the interval's ends on the log scale, as the test found them
    log_high: float = math.nan


def _accepted(log_a: np.ndarray, log_b: np.ndarray, shift: float, confidence: float) -> bool:
    """The rank test does not reject "B is A shifted by ``shift``" (two-sided)."""
    from scipy.stats import mannwhitneyu  # here: SciPy's import costs every process ~0.5 s

    return mannwhitneyu(log_b - shift, log_a, alternative="two-sided", method="exact").pvalue > 1 - confidence


def shift_ratio(a_values, b_values, confidence: float = CONFIDENCE) -> ShiftRatio:
    """B over A from two independent samples of positive values: ``exp`` of the median of all
    ``log b_j - log a_i`` (Hodges-Lehmann) and the shifts the exact Mann-Whitney test does not
    reject. Non-positive values are left out; an empty side gives NaN."""
    log_a = np.log(np.asarray([t for t in a_values if t > 0], dtype=float))
    log_b = np.log(np.asarray([t for t in b_values if t > 0], dtype=float))
    if log_a.size == 0 or log_b.size == 0:
        return ShiftRatio(math.nan, math.nan, math.nan, int(log_a.size), int(log_b.size))
    diffs = np.sort(np.subtract.outer(log_b, log_a).ravel())
    estimate = float(np.median(diffs))
    # Test between neighbouring differences (no ties there); an accepted gap's ends bound the interval.
    gaps = np.concatenate(([diffs[0] - 1.0], (diffs[:-1] + diffs[1:]) / 2, [diffs[-1] + 1.0]))
    inside = [i for i, g in enumerate(gaps) if _accepted(log_a, log_b, g, confidence)]
    low = -math.inf if not inside or inside[0] == 0 else float(diffs[inside[0] - 1])
    high = math.inf if not inside or inside[-1] == len(gaps) - 1 else float(diffs[inside[-1]])
    return ShiftRatio(math.exp(estimate), math.exp(low), math.exp(high), int(log_a.size), int(log_b.size), low, high)


def fit_line(xs, ys) -> tuple[float, float]:
    """Least-squares ``y = a + b x`` with both coefficients clipped at zero: (a, b)."""
    slope, intercept = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return max(float(intercept), 0.0), max(float(slope), 0.0)


def fit_anchored(points) -> tuple[float, float]:
    """``t(n) = alpha + n*beta`` anchored at the smallest ``n``: beta is the least-squares slope
    through that point (never negative), alpha the line's value at 0 (never negative)."""
    sizes, times = (np.asarray(v, float) for v in zip(*sorted(points)))
    dx, dt = sizes - sizes[0], times - times[0]
    beta = max(float(np.dot(dx, dt) / np.dot(dx, dx)), 0.0) if np.dot(dx, dx) > 0 else 0.0
    return max(float(times[0] - beta * sizes[0]), 0.0), beta
