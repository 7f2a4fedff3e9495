"""Contract of the statistics core (mpibench/base/stats.py): the median's interval holds the
median, a ratio of a sample to itself is 1, order does not matter, no values and one value
are answered as the module documents."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpibench.base import stats

finite = st.floats(min_value=1e-9, max_value=1e9, allow_nan=False, allow_infinity=False)
samples = st.lists(finite, min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(samples)
def test_the_interval_holds_the_median(values):
    got = stats.median_interval(values)
    assert got.low <= got.median <= got.high
    assert got.n == len(values)
    assert got.median == float(np.median(values))


@settings(max_examples=200, deadline=None)
@given(samples, st.randoms(use_true_random=False))
def test_order_does_not_matter(values, rng):
    shuffled = list(values)
    rng.shuffle(shuffled)
    assert stats.median_interval(shuffled) == stats.median_interval(values)
    assert stats.median(shuffled) == stats.median(values)


@settings(max_examples=200, deadline=None)
@given(samples)
def test_a_paired_ratio_of_identical_samples_is_one(values):
    got = stats.paired_ratio(values, values)
    assert (got.median, got.low, got.high) == (1.0, 1.0, 1.0)


@settings(max_examples=50, deadline=None)
@given(st.lists(finite, min_size=1, max_size=8))
def test_a_shift_ratio_of_identical_samples_is_one(values):
    got = stats.shift_ratio(values, values)
    assert got.ratio == pytest.approx(1.0)
    assert got.low <= 1.0 <= got.high


def test_no_values_are_nan_or_refused_as_documented():
    assert math.isnan(stats.median([]))
    assert stats.median_or_none([None, None]) is None
    empty = stats.median_interval([math.nan, None])
    assert empty.n == 0 and math.isnan(empty.median) and math.isnan(empty.low)
    assert math.isnan(stats.shift_ratio([], [1.0]).ratio)
    with pytest.raises(ValueError):
        stats.order_ranks(0)


def test_one_value_is_its_own_interval_with_no_coverage():
    got = stats.median_interval([3.0])
    assert (got.median, got.low, got.high, got.n, got.coverage) == (3.0, 3.0, 3.0, 1, 0.0)


def test_the_interval_reaches_95_percent_from_six_values():
    assert stats.median_interval([1, 2, 3, 4, 5]).coverage < 0.95
    assert stats.median_interval([1, 2, 3, 4, 5, 6]).coverage >= 0.95


@given(st.floats(0, 1e3), st.floats(0, 1e-3))
def test_the_fits_recover_a_line(a, b):
    xs = [8.0, 64.0, 1024.0, 65536.0]
    fa, fb = stats.fit_line(xs, [a + b * x for x in xs])
    assert fa == pytest.approx(a, abs=1e-6 + 1e-9 * a) and fb == pytest.approx(b, rel=1e-6, abs=1e-12)
    ga, gb = stats.fit_anchored([(x, a + b * x) for x in xs])
    assert ga == pytest.approx(a, abs=1e-6 + 1e-9 * a) and gb == pytest.approx(b, rel=1e-6, abs=1e-12)
