"""The launch statistics on synthetic samples whose truth is known (seeded; nothing timed)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from mpibench.results import launchstats as ls


def lognormal(rng, n, shift=1.0, sigma=0.1):
    return shift * np.exp(rng.normal(0.0, sigma, n))


@pytest.mark.parametrize("n, j, coverage", [(6, 1, 1 - 2 / 64), (8, 1, 1 - 2 / 256), (9, 2, 1 - 2 * 10 / 512), (5, 1, 1 - 2 / 32),
                                            (20, 6, None)])
def test_order_ranks_are_the_binomial_ones(n, j, coverage):
    got_j, got_coverage = ls.order_ranks(n)
    assert got_j == j
    if coverage is not None:
        assert got_coverage == pytest.approx(coverage)
    # the next rank inward would cover less than 95 %
    assert 1 - 2 * stats.binom.cdf(got_j, n, 0.5) < 0.95


def test_the_interval_covers_the_true_median_as_often_as_it_says():
    """Coverage is distribution-free: a skewed distribution, many seeded samples of nine."""
    rng = np.random.default_rng(7)
    true_median = 1.0  # of exp(N(0, 1))
    samples = [ls.median_interval(rng.lognormal(0.0, 1.0, 9)) for _ in range(2000)]
    hits = sum(s.low <= true_median <= s.high for s in samples)
    expected = samples[0].coverage  # 1 - 2 * 10/512 = 0.961 at n = 9 (j = 2)
    # binomial sampling error of 2000 draws: 3 sigma is about 1.7 %
    assert abs(hits / 2000 - expected) < 0.02


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("shift, verdict", [(1.3, ls.FASTER), (0.75, ls.SLOWER)])
def test_a_known_shift_is_faster_or_slower(seed, shift, verdict):
    rng = np.random.default_rng(seed)
    assert ls.compare(lognormal(rng, 6, shift, 0.05)).verdict == verdict


def test_pure_noise_is_indistinguishable():
    """No true difference and noise well inside the margin: equivalent, in every sample."""
    rng = np.random.default_rng(3)
    verdicts = {ls.compare(lognormal(rng, 6, 1.0, 0.015)).verdict for _ in range(300)}
    assert verdicts == {ls.SAME}
    assert ls.compare([1.0] * 6).verdict == ls.SAME


def test_noise_wider_than_the_margin_cannot_tell_but_claims_a_difference_at_the_tests_level():
    """No true difference, noise of 20 %: the interval straddles 1 and the band's edges, so the
    call is "cannot tell" (or bimodal); faster or slower needs all six launches on one side of 1,
    probability 2/64 under this null, whatever the distribution."""
    rng = np.random.default_rng(4)
    verdicts = [ls.compare(lognormal(rng, 6, 1.0, 0.2)).verdict for _ in range(1000)]
    claims = sum(v in (ls.FASTER, ls.SLOWER) for v in verdicts) / len(verdicts)
    assert abs(claims - 2 / 64) < 0.017  # 3 sigma of 1000 draws at p = 0.031 is 1.6 %
    assert verdicts.count(ls.CANNOT_TELL) > 0.8 * len(verdicts)


def test_a_shift_inside_the_margin_is_indistinguishable():
    """5 % faster in every launch is a real difference, but less than the margin: equivalent."""
    rng = np.random.default_rng(8)
    assert ls.compare(lognormal(rng, 6, 1.05, 0.01)).verdict == ls.SAME
    assert ls.compare(lognormal(rng, 6, 1 / 1.05, 0.01)).verdict == ls.SAME


@pytest.mark.parametrize("seed", [0, 1])
def test_an_interval_across_one_and_an_edge_cannot_tell(seed):
    rng = np.random.default_rng(seed)
    sample = np.r_[lognormal(rng, 3, 0.97, 0.005), lognormal(rng, 3, 1.05, 0.005)]
    sample[-1] = 1.15
    got = ls.compare(sample)
    assert got.ratio.low < 1.0 and got.ratio.high > 1.1
    assert got.verdict == ls.CANNOT_TELL  # neither a difference nor an equivalence is shown
    assert got.resolution_pct == pytest.approx((got.ratio.high - got.ratio.low) / 2 / got.ratio.median * 100)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_clear_difference_with_one_launch_in_a_bad_state_is_still_faster(seed):
    """Five launches 1.3x faster and one at 1.03x: the candidate is faster in every launch, so a
    difference is shown; that the interval reaches below the band's edge says by how much."""
    rng = np.random.default_rng(seed)
    sample = np.r_[lognormal(rng, 5, 1.3, 0.03), [1.03]]
    got = ls.compare(sample)
    assert got.ratio.low < 1.1
    assert got.verdict == ls.FASTER
    assert ls.compare(1 / sample).verdict == ls.SLOWER


def test_an_interval_inside_the_band_is_equivalent_even_when_it_excludes_one():
    """Equivalence is decided first: a 3 % difference in every launch is inside the ±10 % band."""
    assert ls.compare([1.02, 1.03, 1.04, 1.03, 1.02, 1.05]).verdict == ls.SAME
    assert ls.three_way(1.01, 1.12) == ls.FASTER  # beyond the band and above 1
    assert ls.three_way(0.99, 1.12) == ls.CANNOT_TELL
    assert ls.three_way(0.5, 0.95) == ls.SLOWER


def test_no_true_difference_is_called_one_at_the_sign_tests_level():
    """The decision's error rate: with the true median exactly 1 and noise wide enough to reach
    beyond the band, "faster" needs every one of six launches above 1, probability 1/64 whatever
    the distribution."""
    rng = np.random.default_rng(12)
    calls = [ls.compare(rng.lognormal(0.0, 0.3, 6)).verdict for _ in range(3000)]
    rate = calls.count(ls.FASTER) / len(calls)
    assert abs(rate - 1 / 64) < 0.01  # 3 sigma of 3000 draws is 0.7 %


@pytest.mark.parametrize("margin, band", [(0.1, (1 / 1.1, 1.1)), (0.0, (1.0, 1.0)), (0.25, (0.8, 1.25))])
def test_the_band_is_symmetric_on_the_log_scale(margin, band):
    assert ls.band(margin) == pytest.approx(band)


def test_a_negative_margin_is_refused():
    with pytest.raises(ValueError):
        ls.band(-0.1)


def test_a_zero_margin_is_the_plain_sign_test():
    """Without a margin the rule is the sign test: all six launches above 1 is faster."""
    assert ls.compare([1.01, 1.02, 1.03, 1.02, 1.01, 1.04], margin=0.0).verdict == ls.FASTER
    assert ls.compare([1.01, 1.02, 1.03, 1.02, 1.01, 1.04]).verdict == ls.SAME


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("fast", [2, 3, 4])
def test_a_known_bimodal_sample_is_bimodal(seed, fast):
    """Launches in two states 1.8x apart, on both sides of 1."""
    rng = np.random.default_rng(seed)
    sample = np.r_[lognormal(rng, fast, 0.75, 0.04), lognormal(rng, 6 - fast, 1.35, 0.04)]
    rng.shuffle(sample)
    got = ls.compare(sample)
    assert got.verdict == ls.BIMODAL
    assert got.clusters[0] == pytest.approx(0.75, rel=0.1) and got.clusters[1] == pytest.approx(1.35, rel=0.1)


def test_two_clusters_on_one_side_of_one_keep_the_sign():
    rng = np.random.default_rng(5)
    sample = np.r_[lognormal(rng, 3, 1.3, 0.02), lognormal(rng, 3, 2.0, 0.02)]
    got = ls.compare(sample)
    assert got.verdict == ls.FASTER and got.clusters  # true in both states


def test_unimodal_noise_is_rarely_called_clustered():
    rng = np.random.default_rng(11)
    found = sum(bool(ls.clusters(lognormal(rng, 8, 1.0, 0.3))[0]) for _ in range(300))
    assert found / 300 < 0.10  # the test's level is 5 %


def test_clusters_closer_than_the_minimum_gap_are_one_state():
    sample = [1.00, 1.001, 1.002, 1.05, 1.051, 1.052]  # perfectly separated, but 5 % apart
    assert ls.clusters(sample)[0] == ()


def test_fewer_than_six_launches_cannot_claim_anything():
    assert ls.compare([1.5, 1.6, 1.55, 1.52, 1.58]).verdict == ls.TOO_FEW
    assert ls.compare([1.0, 1.0, 1.01, 0.99, 1.0]).verdict == ls.TOO_FEW  # nor equivalence
    assert ls.compare([]).verdict == ls.TOO_FEW
    assert ls.compare([None, float("nan")]).verdict == ls.TOO_FEW


def test_launch_states_name_the_fingerprint_clusters():
    pingpong_s = [170e-6, 790e-6, 800e-6, 172e-6, 744e-6, 190e-6]  # the IMB launches
    assert ls.launch_states(pingpong_s) == ["fast", "slow", "slow", "fast", "slow", "fast"]
    assert ls.launch_states([1.0, 1.01, 0.99, 1.02, 1.0, 0.98]) == ["one"] * 6


@pytest.mark.parametrize("values, band, call", [
    ([1.0, 1.01, 0.99, 1.02, 1.0, 0.98], (0.9, 1.1), "agrees"),
    ([2.0, 2.1, 1.9, 2.05, 2.0, 1.95], (0.9, 1.1), "flagged: slower than the model"),
    ([0.5, 0.52, 0.48, 0.51, 0.5, 0.49], (0.9, 1.1), "flagged: faster than the model"),
])
def test_model_calls(values, band, call):
    assert ls.model_call(ls.median_interval(values), *band) == call


def test_a_wide_interval_across_the_band_cannot_resolve():
    got = ls.model_call(ls.median_interval([0.5, 1.0, 1.5, 0.9, 1.2, 1.0]), 0.9, 1.1)
    assert got == "cannot resolve at this noise (±50 %)"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1e-6, 1e3), min_size=1, max_size=30), st.floats(0.5, 0.99))
def test_interval_contract(values, confidence):
    """The interval holds the median and lies within the sample; ends are sample values."""
    got = ls.median_interval(values, confidence)
    assert min(values) <= got.low <= got.median <= got.high <= max(values)
    assert got.low in values and got.high in values
    assert got.n == len(values) and 0.0 <= got.coverage <= 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.1, 10.0), min_size=1, max_size=12))
def test_verdict_is_symmetric_under_inversion(ratios):
    """Inverting every ratio swaps faster and slower and keeps the rest (the band is symmetric)."""
    swap = {ls.FASTER: ls.SLOWER, ls.SLOWER: ls.FASTER}
    got, inverse = ls.compare(ratios).verdict, ls.compare([1 / r for r in ratios]).verdict
    assert inverse == swap.get(got, got)
    assert not math.isnan(ls.compare(ratios).ratio.median)
