"""Figures over launches: medians with distribution-free intervals, and a verdict per comparison.

A launch of an MPI job is the unit of repetition: on a shared host whole
launches fall into states several-fold apart, and every round inside one
launch shares its state. So a figure is the median over launches of each
launch's own figure, and a comparison is a ratio paired inside each launch
(both halves from the same interleaved rounds), taken over launches.

The interval of a median is the order-statistic interval ``[x_(j), x_(n+1-j)]``
with ``j`` the largest rank whose coverage ``1 - 2 * P(Binomial(n, 1/2) < j)``
still reaches the confidence (:func:`median_interval`): it holds for any
continuous distribution, with exact coverage, which a bootstrap of six launches
does not (a bootstrap's interval of a median of six values is too short). It is
the sign test's interval: an end of it beyond a value is the one-sided sign
test rejecting that value at half the level. Below six values no 95 % interval exists
(even ``[min, max]`` covers only 1 - 2/2^n); the interval is then the full range
with its lower coverage, and the verdict says so.

A verdict combines a test of difference with a test of equivalence against a
stated practical-equivalence margin ``m`` (:data:`MARGIN`, 10 %; a region of
practical equivalence, as in Kruschke's "ROPE" rule and equivalence testing by
two one-sided tests): the band ``[1/(1+m), 1+m]`` on the ratio, symmetric on
the log scale so that inverting the ratio swaps faster and slower. With the
interval ``[low, high]`` (:func:`three_way`):

* ``indistinguishable``: the whole interval lies inside the band (both
  one-sided tests reject a difference of more than the margin: the two are
  equivalent within ±m at this confidence), whether or not it excludes 1;
* ``faster``: otherwise, ``low > 1``: the sign test rejects "no difference"
  (at six launches every launch's ratio above 1, level 1/64 one-sided) and the
  interval reaches beyond the band's edge;
* ``slower``: ``high < 1``, the mirror image;
* ``cannot tell``: the interval holds 1 and reaches beyond an edge of the
  band: neither a difference nor an equivalence is shown; the noise this
  comparison can resolve is the interval's half-width (``resolution_pct``);
* ``bimodal`` in place of ``cannot tell`` where the launches cluster.

Equivalence is decided first, so a ratio whose truth lies near 1 with a narrow
interval stays ``indistinguishable`` rather than flipping to ``faster`` when
the smallest of six launches lands above 1. A difference needs only the
interval to exclude 1, not to lie wholly beyond the band: a candidate 1.3x
faster in every launch whose slowest launch came out at 1.05x is ``faster``
(that it is faster is shown; by how much is the interval), where requiring
``low > 1 + m`` would make one launch in a bad state turn a clear difference
into ``cannot tell``. The rule is stated once here and used by every verdict
(``bench --launches``, ``compare`` over launches, the anchor frame).

``bimodal``: the values split into two groups (two or more each) with a gap
between them at least :data:`MIN_GAP` wide (a factor, on the log scale) and
larger than the groups' spread by more than a unimodal sample of the same size
gives in 95 % of draws (a Monte Carlo test against a normal sample, on logs,
seeded). It is the verdict only where the interval settles nothing (launches
in two clusters across an edge of the band: which answer you get depends on
the launch's state).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..base.stats import CONFIDENCE, Interval, median, median_interval, order_ranks  # noqa: F401 (used here and re-exported)

MARGIN = 0.10  # practical equivalence: ratios within a factor 1.1 either way are "indistinguishable"
MIN_GAP = 1.10  # two clusters closer than 10 % apart are one state of this host's noise
NULL_DRAWS = 4000  # Monte Carlo draws of the unimodal null, per sample size
NULL_SEED = 20160  # the null's generator: the same values always get the same verdict

FASTER, SLOWER, SAME, BIMODAL = "faster", "slower", "indistinguishable", "bimodal"
CANNOT_TELL = "cannot tell"
TOO_FEW = "too few launches"
DECIDED = (FASTER, SLOWER, SAME)


@dataclass(frozen=True)
class Verdict:
    """A paired ratio ``baseline / other`` over launches (> 1: ``other`` is faster)."""

    ratio: Interval
    verdict: str  # faster / slower / indistinguishable / cannot tell / bimodal / too few launches
    clusters: tuple  # medians of the two groups when bimodal, else ()
    bimodal_p: float  # the clustering test's p-value (nan below four values)
    margin: float = MARGIN  # the practical-equivalence margin the verdict used

    @property
    def resolution_pct(self) -> float:
        """The noise this comparison resolves: the interval's half-width in percent of its median."""
        return self.ratio.half_width_pct


def gap_statistic(logs: np.ndarray) -> tuple[float, int]:
    """The largest gap between sorted values over the pooled spread of the two sides (each side
    two or more values), and where it splits; (0, 0) when no split has a positive gap."""
    x = np.sort(logs)
    n = x.size
    best, where = 0.0, 0
    for k in range(2, n - 1):
        gap = x[k] - x[k - 1]
        if gap <= 0:
            continue
        pooled = math.sqrt((np.var(x[:k], ddof=1) * (k - 1) + np.var(x[k:], ddof=1) * (n - k - 1)) / (n - 2))
        value = math.inf if pooled == 0 else gap / pooled
        if value > best:
            best, where = value, k
    return best, where


_NULL: dict[int, np.ndarray] = {}


def _null_statistics(n: int) -> np.ndarray:
    """The gap statistic of ``NULL_DRAWS`` normal samples of size ``n`` (scale-free, so one null per n)."""
    if n not in _NULL:
        rng = np.random.default_rng([NULL_SEED, n])
        _NULL[n] = np.sort([gap_statistic(rng.standard_normal(n))[0] for _ in range(NULL_DRAWS)])
    return _NULL[n]


def clusters(values, alpha: float = 1 - CONFIDENCE, min_gap: float = MIN_GAP) -> tuple[tuple, float, np.ndarray]:
    """(medians of the two groups, or () when the values are one group; the test's p-value;
    each value's group, 0 or 1, in the order given). Values must be positive (times, ratios)."""
    x = np.asarray(values, dtype=float)
    groups = np.zeros(x.size, dtype=int)
    if x.size < 4 or np.any(x <= 0):
        return (), math.nan, groups
    logs = np.log(x)
    statistic, k = gap_statistic(logs)
    if k == 0:
        return (), 1.0, groups
    null = _null_statistics(x.size)
    p = (1 + int(np.sum(null >= statistic))) / (1 + null.size)
    order = np.sort(logs)
    cut = (order[k - 1] + order[k]) / 2
    wide = order[k] - order[k - 1] >= math.log(min_gap)
    if p >= alpha or not wide:
        return (), p, groups
    groups = (logs > cut).astype(int)
    return (median(x[groups == 0]), median(x[groups == 1])), p, groups


def band(margin: float = MARGIN) -> tuple[float, float]:
    """The ratios judged practically equal: within a factor ``1 + margin`` either way."""
    if not margin >= 0:
        raise ValueError("the margin must be 0 or more")
    return 1.0 / (1.0 + margin), 1.0 + margin


def three_way(low: float, high: float, margin: float = MARGIN) -> str:
    """The module note's rule on an interval ``[low, high]`` of a ratio: ``SAME`` inside the band,
    else ``FASTER`` above 1, ``SLOWER`` below 1, else ``CANNOT_TELL``."""
    low_edge, high_edge = band(margin)
    if low_edge <= low and high <= high_edge:
        return SAME
    if low > 1.0:
        return FASTER
    if high < 1.0:
        return SLOWER
    return CANNOT_TELL


def decide(interval: Interval, found: tuple, confidence: float = CONFIDENCE, margin: float = MARGIN) -> str:
    """The verdict on an interval of ``baseline / other`` (module note); ``found``: its clusters."""
    if interval.n == 0 or interval.coverage < confidence:
        return TOO_FEW  # no pair of launches reaches the confidence: no claim either way
    call = three_way(interval.low, interval.high, margin)
    return BIMODAL if call == CANNOT_TELL and found else call


def compare(ratios, confidence: float = CONFIDENCE, margin: float = MARGIN) -> Verdict:
    """The verdict on per-launch paired ratios ``baseline / other``."""
    clean = [r for r in ratios if r is not None and np.isfinite(r) and r > 0]
    interval = median_interval(clean, confidence)
    found, p, _ = clusters(clean, 1 - confidence)
    return Verdict(interval, decide(interval, found, confidence, margin), found, p, margin)


def launch_states(values, names=("fast", "slow")) -> list[str]:
    """Each launch's state from one fingerprint time: ``fast``/``slow`` when the launches cluster
    (:func:`clusters`), else one state ``one``."""
    found, _, groups = clusters(values)
    if not found:
        return ["one"] * len(groups)
    return [names[g] for g in groups]


def model_call(measured: Interval, band_low_s: float, band_high_s: float) -> str:
    """A measured time's interval against the model's band: ``flagged`` only where the interval
    excludes the band; ``agrees`` where the interval lies inside it; otherwise the noise is
    too large to tell."""
    if not np.isfinite(measured.low) or not (band_high_s >= band_low_s):
        return "no model"
    if measured.low > band_high_s:
        return "flagged: slower than the model"
    if measured.high < band_low_s:
        return "flagged: faster than the model"
    if band_low_s <= measured.low and measured.high <= band_high_s:
        return "agrees"
    return f"cannot resolve at this noise (±{measured.half_width_pct:.0f} %)"
