"""``auto``'s choice: the cheaper candidate by the calibrated alpha-beta-gamma model, per bucket."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.sync.auto import Auto, LinkCosts, choose
from mpibench.sync.rabenseifner import Rabenseifner
from mpibench.sync.rd import RecursiveDoubling

SHARED_MEMORY = LinkCosts(alpha_s=2e-6, beta_s_per_byte=2e-10, gamma_cache_s_per_byte=2e-10,
                          gamma_memory_s_per_byte=4e-10)


def test_costs_read_from_a_calibration_dict():
    costs = LinkCosts.from_option({"alpha_s": 1e-6, "beta_s_per_byte": 2e-10, "gamma_cache_s_per_byte": 3e-10,
                                   "gamma_memory_s_per_byte": 5e-10, "cores": 2})
    assert costs.gamma_s_per_byte(1 << 10) == 3e-10 and costs.gamma_s_per_byte(64 << 20) == 5e-10
    assert costs.source == "calibration"


def test_short_messages_take_rd_long_ones_rabenseifner():
    for p in (2, 3, 4, 5, 8, 64):
        assert choose(SHARED_MEMORY, p, 4 << 10) is RecursiveDoubling
        assert choose(SHARED_MEMORY, p, 64 << 20) is Rabenseifner


@settings(deadline=None)
@given(p=st.integers(2, 256), small=st.integers(4, 1 << 26), factor=st.integers(2, 64))
def test_once_rabenseifner_wins_it_keeps_winning_for_longer_buckets(p, small, factor):
    """The switch is a single threshold per p, as in MPI libraries' tuned tables."""
    if choose(SHARED_MEMORY, p, small) is Rabenseifner:
        assert choose(SHARED_MEMORY, p, small * factor) is Rabenseifner


@settings(deadline=None)
@given(p=st.integers(1, 128), nbytes=st.integers(0, 1 << 28))
def test_auto_models_the_cheaper_candidate(p, nbytes):
    cost = Auto.cost_s(SHARED_MEMORY, p, nbytes, {})
    assert cost == min(RecursiveDoubling.cost_s(SHARED_MEMORY, p, nbytes, {}),
                       Rabenseifner.cost_s(SHARED_MEMORY, p, nbytes, {}))
