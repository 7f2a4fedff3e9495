"""Fault schedules without MPI: validation, TOML round trips, named and random schedules."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.faults import Delay, Kill, Partition, Schedule, load_schedule, random_schedule, validate
from mpibench.faults.scenarios import SCENARIOS
from mpibench.faults.toml_io import dump, loads
from mpibench.faults.wrapper import Injector


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9])
def test_named_scenarios_fit_or_refuse(n):
    for name, (_, smallest) in SCENARIOS.items():
        if n < smallest:
            with pytest.raises(ValueError, match="needs at least"):
                load_schedule(name, n)
            continue
        schedule = load_schedule(name, n)
        assert loads(dump(schedule), n, "x") == schedule
        assert "\n" not in schedule.summary() and name in schedule.summary()


def test_split_brain_has_no_majority_and_minority_is_one_side():
    for n in (2, 3, 4, 5, 8):
        sides = load_schedule("split-brain", n).partitions[0].sides
        assert all(2 * len(s) <= n for s in sides)
    for n in (3, 4, 8):
        big, small = load_schedule("partition-heal", n).partitions[0].sides
        assert 2 * len(big) > n and 0 in big and n - 1 in small


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9), steps=st.integers(1, 30))
@settings(max_examples=200, deadline=None)
def test_random_schedule_is_pure_valid_and_round_trips(seed, n, steps):
    a, b = random_schedule(seed, n, steps), random_schedule(seed, n, steps)
    assert a == b
    assert validate(a) is a
    assert loads(dump(a), n) == a
    assert len({k.rank for k in a.kills}) < n  # someone survives


@pytest.mark.parametrize("n", [3, 4, 5, 8])
def test_random_schedules_fault_every_worker_including_the_first(n):
    killed, cut_off = set(), set()
    for seed in range(300):
        s = random_schedule(seed, n, 10)
        killed |= {k.rank for k in s.kills}
        for p in s.partitions:
            biggest = max(len(side) for side in p.sides)
            cut_off |= {w for side in p.sides if len(side) < biggest or 2 * len(side) <= n for w in side}
    assert killed == set(range(n))
    assert 0 in cut_off  # worker 0 also lands on a side that cannot commit


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_coordinator_scenarios_fault_worker_zero(n):
    assert load_schedule("kill-coordinator", n).kills == [Kill(0, 2, "mid_reduction", 2)]
    if n >= 3:
        p = load_schedule("partition-coordinator-minority", n).partitions[0]
        side = p.sides[p.side_of(0)]
        assert 2 * len(side) < n and (p.from_step, p.to_step) == (1, 3)


def test_any_worker_may_be_killed_or_cut_off():
    validate(loads("[[kill]]\nrank = 0\nstep = 1\n", 4))
    validate(loads("[[partition]]\nsides = [[0], [1, 2, 3]]\nfrom_step = 1\n", 4))


def test_random_schedules_mix_every_kind():
    seen = set()
    for seed in range(200):
        for e in random_schedule(seed, 5, 10).events:
            seen.add(e.phase if isinstance(e, Kill) else e.kind)
    assert {"before_compute", "mid_reduction", "after_reduce", "after_apply", "recovery",
            "delay", "partition"} <= seen


BAD = {
    "unknown kind": ("[[explode]]\nrank = 1\n", "unknown key or event kind"),
    "rank outside": ("[[kill]]\nrank = 7\nstep = 1\n", "outside the world"),
    "kills everyone": ("[[kill]]\nrank = 1\nstep = 1\n[[kill]]\nrank = 2\nstep = 1\n[[kill]]\nrank = 3\nstep = 1\n"
                       "[[kill]]\nrank = -4\nstep = 2\n", "cannot be killed|every rank"),
    "twice": ("[[kill]]\nrank = 1\nstep = 1\n[[kill]]\nrank = 1\nstep = 3\n", "killed twice"),
    "phase": ("[[kill]]\nrank = 1\nstep = 1\nphase = \"lunch\"\n", "unknown phase"),
    "recovery alone": ("[[kill]]\nrank = 1\nstep = 1\nphase = \"recovery\"\n", "during recovery needs"),
    "delay after death": ("[[kill]]\nrank = 1\nstep = 1\n[[delay]]\nrank = 1\nsteps = [2]\nseconds = 0.1\n",
                          "dead by step"),
    "overlapping delays": ("[[delay]]\nrank = 1\nsteps = [2]\nseconds = 0.1\n"
                           "[[delay]]\nrank = 1\nsteps = [2, 3]\nseconds = 0.1\n", "overlaps"),
    "negative seconds": ("[[delay]]\nrank = 1\nsteps = [2]\nseconds = -1\n", "seconds"),
    "sides overlap": ("[[partition]]\nsides = [[0, 1], [1, 2, 3]]\nfrom_step = 1\n", "two sides"),
    "sides miss a rank": ("[[partition]]\nsides = [[0, 1], [2]]\nfrom_step = 1\n", "cover every rank"),
    "heal before cut": ("[[partition]]\nsides = [[0, 1, 2], [3]]\nfrom_step = 3\nto_step = 2\n", "after from_step"),
    "partitions overlap": ("[[partition]]\nsides = [[0, 1, 2], [3]]\nfrom_step = 1\nto_step = 4\n"
                           "[[partition]]\nsides = [[0, 1, 3], [2]]\nfrom_step = 3\n", "overlaps"),
    "kill inside cut": ("[[kill]]\nrank = 1\nstep = 2\n[[partition]]\nsides = [[0, 1, 2], [3]]\nfrom_step = 1\n",
                        "not supported"),
    "unknown field": ("[[kill]]\nrank = 1\nstep = 1\nwhen = 3\n", "unknown field"),
    "missing field": ("[[kill]]\nrank = 1\n", "missing field"),
    "wrong type": ("[[kill]]\nrank = \"one\"\nstep = 1\n", "whole number"),
    "not toml": ("[[kill]\nrank = 1\n", "not valid TOML"),
    "world size": ("world_size = 8\n", "written for 8 ranks"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_schedules_name_the_problem_in_one_line(case):
    text, needle = BAD[case]
    with pytest.raises(ValueError) as info:
        validate(loads(text, 4))
    message = str(info.value)
    assert "\n" not in message
    assert any(part in message for part in needle.split("|")), message


def test_negative_ranks_count_from_the_end():
    schedule = validate(loads("[[kill]]\nrank = -1\nstep = 2\nphase = \"mid_reduction\"\nmessages = 2\n", 5))
    assert schedule.kills == [Kill(4, 2, "mid_reduction", 2)]


def test_expected_events_by_step():
    s = validate(Schedule("x", 4, (Kill(3, 2), Delay(1, (1,), 0.2), Partition(((0, 1, 2), (3,)), 4, 6))))
    assert s.killed_by(1) == set() and s.killed_by(2) == {3}
    assert s.partition_at(3) is None and s.partition_at(5).sides[1] == (3,) and s.partition_at(6) is None
    assert s.delay_at(1, 1).seconds == 0.2 and s.delay_at(1, 2) is None


def test_injector_reachability_and_lateness():
    s = validate(Schedule("x", 4, (Delay(2, (1,), 0.01), Partition(((0, 1, 2), (3,)), 3, 5)),))
    inj = Injector(s, 3, straggler_deadline_s=0.005)
    inj.enter(3)
    assert inj.reachable_set((0, 1, 2, 3)) == (3,)
    inj.enter(5)
    assert inj.reachable_set((0, 1, 2, 3)) == (0, 1, 2, 3)
    late = Injector(s, 2, straggler_deadline_s=0.005)
    late.mark(1, "before_compute")
    assert late.late()
    late.mark(1, "before_compute")  # a redo is not delayed again
    late.mark(2, "before_compute")
    assert not late.late()
