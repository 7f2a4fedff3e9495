"""The exhaustive small-world plan (mpibench.sim.exhaustive) and how findings are classed (.sweep)."""
from __future__ import annotations

import itertools

import pytest

from mpibench.drive.cases import OK, VIOLATION, Case, Outcome
from mpibench.drive.launch import JobResult
from mpibench.faults import Schedule
from mpibench.faults.schedule import Kill, validate
from mpibench.sim.exhaustive import ExhaustivePlan
from mpibench.sim.sweep import _same


@pytest.mark.parametrize("p", [2, 3, 4])
def test_every_kill_point_is_a_case_and_every_schedule_is_valid(p):
    plan = ExhaustivePlan(workers=(p,))
    schedules = [events for _, events, _ in plan.schedules(p)]
    singles = {e[0] for e in schedules if len(e) == 1 and isinstance(e[0], Kill)}
    for w, s in itertools.product(range(p), range(plan.fault_steps)):
        assert Kill(w, s, "before_compute") in singles and Kill(w, s, "after_apply") in singles
        assert {Kill(w, s, "mid_reduction", k) for k in range(1, 2 * (p - 1) + 1)} <= singles
    for events in schedules:
        validate(Schedule("x", p, events))
    pairs = [e for e in schedules if len(e) == 2]
    assert (len(pairs) > 0) == (p >= 3) and all(a.rank != b.rank for a, b in pairs)


def test_the_count_is_the_plan():
    plan = ExhaustivePlan(workers=(2, 3), strategies=("ring", "ps"))
    cases = list(plan.cases())
    assert plan.count() == len(cases) == 2 * (54 + 1566)
    assert len({c.case_id for c in cases}) == len(cases)


def _outcome(outcome, invariant=None):
    case = Case("c", 0, 2, "ring", "shrink", 4, Schedule("x", 2, ()))
    return Outcome(case, outcome, 4, 10, int(outcome == VIOLATION), f"1 {invariant}" if invariant else "",
                   invariant, "", JobResult(0, 0.1, 10.0, "", ""))


def test_a_finding_is_reproduced_only_when_mpi_fails_the_same_way():
    assert _same(_outcome(VIOLATION, "equivalence"), _outcome(VIOLATION, "equivalence"))
    assert not _same(_outcome(VIOLATION, "equivalence"), _outcome(VIOLATION, "data"))
    assert not _same(_outcome(VIOLATION, "equivalence"), _outcome(OK))
    assert _same(_outcome("crash"), _outcome("crash"))
