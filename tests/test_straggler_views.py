"""The straggler drop's decision rule without MPI: one decided view at most, never two groups."""
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.faults.straggler import decided_view, may_commit


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8])
def test_two_disjoint_groups_never_both_may_commit(n):
    members = tuple(range(n))
    subsets = [c for k in range(1, n + 1) for c in itertools.combinations(members, k)]
    for a in subsets:
        for b in subsets:
            if not set(a) & set(b):
                assert not (may_commit(a, members) and may_commit(b, members)), (a, b)


@pytest.mark.parametrize("n, late", [(2, 1), (3, 2), (4, 3), (4, 0), (8, 5)])
def test_on_time_workers_that_agree_drop_the_late_one(n, late):
    members = tuple(range(n))
    on_time = tuple(w for w in members if w != late)
    views = {w: on_time for w in on_time}
    assert decided_view(views, members) == on_time
    # the late worker, arriving, also holds its own view of everyone: the same decision
    assert decided_view({**views, late: members}, members) == on_time


def test_half_without_the_first_worker_falls_back():
    assert decided_view({1: (1,)}, (0, 1)) is None  # worker 0 late among two: it is waited for


def test_views_that_differ_decide_nothing():
    members = (0, 1, 2, 3)
    assert decided_view({0: (0, 1, 2), 1: (0, 1, 2), 2: (0, 1, 2, 3)}, members) is None


@given(n=st.integers(1, 8), data=st.data())
@settings(max_examples=300, deadline=None)
def test_every_observer_with_the_views_of_the_decided_group_decides_the_same(n, data):
    members = tuple(range(n))
    views = {}
    for w in members:
        if data.draw(st.booleans()):
            others = data.draw(st.sets(st.sampled_from(members)))
            views[w] = tuple(sorted(others | {w}))
    decided = decided_view(views, members)
    if decided is None:
        return
    assert may_commit(decided, members)
    # any observer that holds only the decided group's views (what each of them waits for)
    assert decided_view({w: views[w] for w in decided}, members) == decided
