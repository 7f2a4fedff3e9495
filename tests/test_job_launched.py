"""A launched process survives every case of a batch: the reordering rule (no MPI here;
the batch tests in test_batch.py and test_sweep.py run it under mpirun)."""
from hypothesis import given, settings, strategies as st

from mpibench.drive.sweep import SweepPlan
from mpibench.job.launched import kill_ids, new_order


@st.composite
def worlds(draw):
    n = draw(st.integers(1, 9))
    launched = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    killed = set(draw(st.lists(st.integers(0, n - 1), max_size=n)))
    return launched, killed


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_a_launched_member_ends_up_at_an_id_no_kill_names(world):
    launched, killed = world
    n = len(launched)
    spared = [i for i in range(n) if i not in killed]
    order = new_order(launched, killed)
    safe_before = any(launched[i] for i in spared)
    if order is None:
        # nothing moved: already safe, or the case's own world, or nothing could help
        assert safe_before or all(launched) or not any(launched) or not killed or not spared
        return
    assert not safe_before and sorted(order) == list(range(n))  # a permutation of the members
    assert any(launched[order[i]] for i in spared)  # now a launched process holds a spared id
    assert sum(old != i for i, old in enumerate(order)) == 2  # one swap, nobody else moves


def test_the_hung_sweep_cases_are_the_ones_the_rule_moves():
    # The default sweep hung on s1-n3 (respawn; kills of workers 0 and 2 in one step) after
    # five shrinking s0-n3 cases had left one launched member, at id 0, beside two spawned ones.
    case = next(c for c in SweepPlan(2, (3,), ("ring",), 16).cases() if c.case_id == "s1-n3-ring")
    assert kill_ids(case.schedule) == {0, 2} and case.recovery == "respawn"
    assert new_order([True, False, False], kill_ids(case.schedule)) == [1, 0, 2]
    assert new_order([True, True, True], kill_ids(case.schedule)) is None  # as its own run builds it
