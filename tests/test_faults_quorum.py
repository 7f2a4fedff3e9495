"""The quorum rule after a shrink (``faults.quorum``): pure, so checked without MPI."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from mpibench.faults.quorum import DETECTOR_VARIABLE, may_go_on, suspicions_possible


@pytest.mark.parametrize("previous, survivors, allowed", [
    ((0, 1, 2), (0, 1), True),
    ((0, 1, 2), (2,), False),
    ((0, 1, 2), (1, 2), True),  # a majority without worker 0
    ((0, 1), (0,), True),  # a tie: the half with the lowest id
    ((0, 1), (1,), False),
    ((0, 1, 2, 3), (2, 3), False),
    ((1, 3, 5, 6), (1, 6), True),  # lowest id of the membership, not worker 0
    ((4,), (4,), True),
    ((0, 1, 2), (), False),
])
def test_quorum_with_suspicions(previous, survivors, allowed):
    assert may_go_on(previous, survivors, True) is allowed


@pytest.mark.parametrize("previous, survivors", [((0, 1), (1,)), ((0, 1, 2), (2,)), ((0, 1, 2, 3), (3,))])
def test_without_the_detector_real_failures_never_stall_the_survivors(previous, survivors):
    assert may_go_on(previous, survivors, False)


@given(st.sets(st.integers(0, 40), min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_two_disjoint_survivor_sets_are_never_both_allowed(previous, rnd):
    members = sorted(previous)
    side = {w: rnd.randrange(3) for w in members}  # 0, 1: the two sides; 2: dead on both
    a = [w for w in members if side[w] == 0]
    b = [w for w in members if side[w] == 1]
    assert not (may_go_on(members, a, True) and may_go_on(members, b, True))


@given(st.sets(st.integers(0, 40), min_size=1, max_size=12), st.data())
def test_a_majority_always_goes_on(previous, data):
    members = sorted(previous)
    kept = data.draw(st.sets(st.sampled_from(members), min_size=len(members) // 2 + 1))
    assert may_go_on(members, kept, True)


@pytest.mark.parametrize("value, on", [("true", True), ("1", True), ("TRUE", True), ("false", False),
                                       ("0", False), ("", False), (None, False)])
def test_detector_is_read_from_the_mca_variable(value, on):
    env = {} if value is None else {DETECTOR_VARIABLE: value}
    assert suspicions_possible(env) is on
