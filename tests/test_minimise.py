"""Schedule shrinking, against fake "still fails" predicates (no MPI)."""
from hypothesis import given, settings, strategies as st

from mpibench.faults import Delay, Kill, Partition, Schedule, random_schedule, validate
from mpibench.drive.minimise import Candidate, is_valid, shrink, simpler


def kills_rank_at_most(step):
    """Fails while some worker is killed at or before ``step``."""
    return lambda c: any(isinstance(e, Kill) and e.step <= step for e in c.schedule.events)


def start_from(seed, workers, steps=10):
    return Candidate(workers, steps, random_schedule(seed, workers, steps))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 8))
def test_result_still_fails_and_is_locally_minimal(seed, workers):
    start = start_from(seed, workers)
    fails = kills_rank_at_most(7)
    if not fails(start):
        return
    result = shrink(start, fails, max_runs=10_000)
    assert not result.exhausted and fails(result.minimal)
    assert is_valid(result.minimal)
    assert not any(fails(c) for c in simpler(result.minimal) if is_valid(c))
    assert result.minimal.size() <= start.size()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 8))
def test_one_kill_left_moved_to_step_zero_with_two_workers(seed, workers):
    start = start_from(seed, workers)
    fails = kills_rank_at_most(9)
    if not fails(start):
        return
    m = shrink(start, fails, max_runs=10_000).minimal
    assert m.workers == 2
    assert [type(e) for e in m.schedule.events] == [Kill]
    assert m.schedule.events[0].step == 0 and m.schedule.world_size == 2


def test_budget_is_respected_and_reported():
    start = Candidate(5, 10, validate(Schedule("s", 5, (Kill(3, 6, "after_apply"), Delay(1, (2, 4), 0.1),
                                                       Partition(((0, 1, 2), (3, 4)), 7, 9)))))
    calls = []

    def fails(c):
        calls.append(c)
        return kills_rank_at_most(9)(c)

    result = shrink(start, fails, max_runs=3)
    assert len(calls) == 3 and result.runs == 3 and result.exhausted


def test_trailing_steps_cut_first_when_the_violation_step_is_known():
    start = Candidate(4, 12, validate(Schedule("s", 4, (Kill(2, 1, "before_compute"), Delay(3, (9,), 0.1)))))
    seen = []

    def fails(c):
        seen.append(c)
        return True

    shrink(start, fails, max_runs=1, violation_step=lambda c: 3)
    first = seen[0]
    assert first.steps == 4 and all(e.rank != 3 for e in first.schedule.events)


def test_fewer_workers_drops_one_rank_everywhere_and_renumbers():
    events = (Kill(3, 2), Delay(2, (1,), 0.1), Partition(((0, 1), (2, 3)), 4, 6))
    start = Candidate(4, 8, validate(Schedule("s", 4, events)))
    smaller = {c.schedule.events: c for c in simpler(start) if c.workers == 3}
    assert len(smaller) == 3  # without worker 3, 2 or 1; worker 0 always stays
    without_3 = {type(e): e for e in list(smaller.values())[0].schedule.events}
    assert Kill not in without_3 and without_3[Partition].sides == ((0, 1), (2,))
    without_2 = {type(e): e for e in list(smaller.values())[1].schedule.events}
    assert without_2[Kill].rank == 2 and Delay not in without_2


def test_invalid_candidates_are_never_run():
    start = start_from(3, 5)
    ran = []
    shrink(start, lambda c: ran.append(c) or False, max_runs=10_000)
    assert all(is_valid(c) for c in ran)


def test_events_that_must_coincide_move_earlier_together():
    """A kill at the step a partition heals: both shift, so the pair is kept."""
    def fails(c):
        kills = [e for e in c.schedule.events if isinstance(e, Kill)]
        cuts = [e for e in c.schedule.events if isinstance(e, Partition)]
        return any(k.step == p.to_step for k in kills for p in cuts)

    events = (Partition(((0, 2), (1,)), 2, 5), Kill(2, 5, "mid_reduction"), Delay(0, (0, 5), 0.1))
    start = Candidate(3, 8, validate(Schedule("s", 3, events)))
    m = shrink(start, fails, max_runs=10_000).minimal
    kill, cut = sorted(m.schedule.events, key=lambda e: type(e).__name__)
    assert cut.from_step == 0 and kill.step == cut.to_step == 3 and m.steps == 6
