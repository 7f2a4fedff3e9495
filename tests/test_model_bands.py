"""The model by message-size band: the split found in the data, each message's band, the page's label."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from mpibench.job.timing import fit_bands
from mpibench.results import costmodel
from mpibench.results.calibration import Calibration
from mpibench.sync.registry import message_bytes
from mpibench.sync.ring import ring_cost_s

SIZES = (8, 256, 1 << 10, 4 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20, 4 << 20)
SPLITS = (4 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10)


def _two_lines(split, a_low, b_low, a_high, b_high):
    return [(n, a_low + n * b_low if n <= split else a_high + n * b_high) for n in SIZES]


@pytest.mark.parametrize("split", [16 << 10, 64 << 10, 128 << 10])
def test_the_split_and_both_lines_are_recovered(split):
    found, bands = fit_bands(_two_lines(split, 1e-6, 2e-10, 8e-6, 0.5e-10), SPLITS)
    assert found == split and len(bands) == 2
    (upper, a_low, b_low), (top, a_high, b_high) = bands
    assert upper == split and top is None
    assert (a_low, b_low) == pytest.approx((1e-6, 2e-10), rel=1e-6)
    assert (a_high, b_high) == pytest.approx((8e-6, 0.5e-10), rel=1e-6)


def test_one_line_stays_one_band():
    found, bands = fit_bands([(n, 2e-6 + n * 1e-10) for n in SIZES], SPLITS)
    assert found is None and len(bands) == 1 and bands[0][0] is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(SIZES), st.floats(1e-7, 1e-2)), min_size=2, max_size=11,
                unique_by=lambda p: p[0]))
def test_bands_never_have_negative_figures(points):
    _, bands = fit_bands(points, SPLITS)
    assert bands and all(alpha >= 0 and beta >= 0 for _, alpha, beta in bands)


def _cal(**kw):
    base = dict(alpha_s=5e-6, beta_s_per_byte=1e-10, gamma_cache_s_per_byte=1e-10, gamma_memory_s_per_byte=2e-10,
                compute_fixed_s=0.0, compute_per_sample_s=0.0, cores=2, ranks_on_host=2, ranks=2)
    return Calibration(**{**base, **kw})


def test_each_message_takes_its_bands_alpha_and_beta():
    cal = _cal(bands=[[64 << 10, 1e-6, 2e-10], [None, 8e-6, 0.5e-10]], band_split_bytes=64 << 10)
    assert cal.band(4096) == ("<= 64 KiB", 1e-6, 2e-10) and cal.band(1 << 20) == ("> 64 KiB", 8e-6, 0.5e-10)
    # a ring's message is a segment: 256 KiB on 2 ranks sends 128 KiB pieces (upper band)
    ring = costmodel.sync_s(cal, "ring", 2, 256 << 10, {"bucket_bytes": 1 << 20})
    assert ring == pytest.approx(ring_cost_s(cal.in_band(128 << 10), 2, 256 << 10))
    assert "> 64 KiB" in costmodel.band_of(cal, "ring", 2, 256 << 10, {"bucket_bytes": 1 << 20})
    assert "<= 64 KiB" in costmodel.band_of(cal, "ring", 2, 64 << 10, {})
    stepped = Calibration.from_dict({**cal.as_dict(), "alpha_step_s": 3e-6})
    assert stepped.in_step().bands == [] and stepped.in_step().alpha_s == 3e-6  # a step keeps its own fit
    assert _cal().in_band(1 << 20).alpha_s == 5e-6  # no bands: one line


@pytest.mark.parametrize("strategy, p, n, expected", [
    ("ring", 4, 1 << 20, 1 << 18), ("native", 2, 4096, 4096), ("native", 2, 1 << 20, 1 << 19),
    ("rd", 4, 1 << 20, 1 << 20), ("rabenseifner", 4, 1 << 20, 1 << 19), ("ps", 4, 1 << 20, 1 << 18),
    ("ring", 1, 100, 100)])
def test_message_sizes_by_strategy(strategy, p, n, expected):
    assert message_bytes(strategy, p, n, {}) == expected


def test_a_steps_messages_take_the_step_bands_not_the_back_to_back_ones():
    """The after-compute exchange's bands, when calibrated, price a training step's messages;
    the back-to-back bands price only collectives benchmarked back to back."""
    cal = _cal(bands=[[64 << 10, 1e-6, 2e-10], [None, 8e-6, 0.5e-10]], band_split_bytes=64 << 10,
               alpha_step_s=3e-6, beta_step_s_per_byte=3e-10,
               step_bands=[[16 << 10, 4e-6, 4e-10], [None, 20e-6, 1e-10]], step_band_split_bytes=16 << 10)
    step = cal.in_step()
    assert step.band(8 << 10) == ("<= 16 KiB", 4e-6, 4e-10) and step.band(38 << 10) == ("> 16 KiB", 20e-6, 1e-10)
    ring = costmodel.sync_s(step, "ring", 2, 76 << 10)  # two 38 KiB segments, upper step band
    assert ring == pytest.approx(ring_cost_s(Calibration.from_dict(
        {**step.as_dict(), "alpha_s": 20e-6, "beta_s_per_byte": 1e-10}), 2, 76 << 10))
    assert step.in_step().bands == step.bands  # asking twice changes nothing
    assert cal.in_band(38 << 10).alpha_s == 1e-6  # back to back: its own bands
