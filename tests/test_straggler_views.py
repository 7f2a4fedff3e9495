"""The straggler drop's decision rule without MPI: one decided view at most, never two groups,
and a worker dropped only when the schedule makes it late."""
import itertools
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.faults.schedule import Delay, Kill, Schedule
from mpibench.faults.straggler import DropProtocol, awaited, decided_view, late_at, may_commit


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


# Whether a worker is dropped is decided by the schedule, which every engine reads alike: the
# short deadline applies only at a step with a scheduled straggler, and a worker the schedule
# does not make late is waited for however slow the host makes it.
SCHEDULE = Schedule("s", 4, (Delay(3, (1, 2), 0.6), Delay(2, (2,), 0.05), Kill(1, 3)))


def test_late_at_names_the_workers_delayed_beyond_the_deadline_only():
    assert late_at(SCHEDULE, 0, 0.15) == set()
    assert late_at(SCHEDULE, 2, 0.15) == {3}  # worker 2's 0.05 s is waited for
    assert late_at(SCHEDULE, 2, 0.04) == {2, 3}
    assert late_at(SCHEDULE, 2, 0.0) == set()  # no deadline: everyone is waited for


def test_awaited_leaves_out_the_scheduled_late_and_dead_only():
    members = (0, 1, 2, 3)
    assert awaited(SCHEDULE, 0, 0.15, members) == {0, 1, 2, 3}
    assert awaited(SCHEDULE, 1, 0.15, members) == {0, 1, 2}
    assert awaited(SCHEDULE, 3, 0.15, members) == {0, 2, 3}


def _protocol(schedule, straggler_s=0.15, patient=False):
    state = SimpleNamespace(patient=patient, attempts=0)
    recovery = SimpleNamespace(schedule=schedule, straggler_s=straggler_s, deadline_s=30.0, state=state)
    return DropProtocol(recovery)


def test_the_short_deadline_holds_only_at_a_step_with_a_scheduled_straggler():
    drop = _protocol(SCHEDULE)
    assert [drop.data_deadline_s(step) for step in range(4)] == [30.0, 0.15, 0.15, 30.0]
    assert _protocol(SCHEDULE, patient=True).data_deadline_s(1) == 30.0  # a patient redo waits
    assert _protocol(SCHEDULE, straggler_s=0.0).data_deadline_s(1) == 30.0


def _decide(schedule, arrive_in_grace, step=1):
    """The view worker 0 sends when ``arrive_in_grace`` announced within the grace and the
    others (but the scheduled-late) arrive later; the views it collects all equal its own."""
    drop = _protocol(schedule)
    members = (0, 1, 2, 3)
    trainer = SimpleNamespace(comm=SimpleNamespace(worker_ids=members, worker_id=0))
    waits = []

    def gather(trainer, tag, key, value, wait_s, expected, stop=None):
        waits.append(wait_s)
        if wait_s < 1:
            return {w: w for w in arrive_in_grace}
        return {w: w for w in expected}

    sent = []

    def collect(trainer, tag, key, view, wait_s, expected, stop=None):
        sent.append(view)
        return {w: view for w in view}

    drop._gather, drop._collect = gather, collect
    drop._regroup = lambda trainer, group: None
    drop.outcome_waiting = lambda: False
    drop.announce = lambda step: None
    return drop._decide(trainer, step), sent[0], waits


def test_a_worker_slow_without_a_schedule_is_waited_for_not_dropped():
    # worker 2 missed the grace at step 1 (a loaded host); only worker 3 is scheduled late
    decision, view, waits = _decide(SCHEDULE, (0, 1))
    assert view == (0, 1, 2)
    assert decision == "retry" and waits == [0.15 / 4, 30.0]
    # at a step with no scheduled straggler a slow worker is in every view: nobody is dropped
    decision, view, _ = _decide(SCHEDULE, (0, 1), step=0)
    assert view == (0, 1, 2, 3) and decision is None


def test_the_scheduled_straggler_is_still_dropped_after_the_grace():
    decision, view, waits = _decide(SCHEDULE, (0, 1, 2))
    assert view == (0, 1, 2) and decision == "retry" and waits == [0.15 / 4]
