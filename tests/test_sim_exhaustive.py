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


@pytest.mark.parametrize("p", [2, 3, 4])
def test_a_sharded_strategy_also_dies_at_every_message_of_its_all_gather_and_only_it(p):
    plan = ExhaustivePlan(workers=(p,), strategies=("ring", "zero-ring", "zero-halving"))
    for strategy in ("zero-ring", "zero-halving"):
        singles = {e[0] for _, e, _ in plan.schedules(p, strategy) if len(e) == 1 and isinstance(e[0], Kill)}
        for w, s in itertools.product(range(p), range(plan.fault_steps)):
            assert {Kill(w, s, "mid_gather", k) for k in range(1, p)} <= singles
            assert Kill(w, s, "after_reduce") in singles  # the sharded step
    ring = [e for _, e, _ in plan.schedules(p, "ring")]
    assert not any(k.phase == "mid_gather" for e in ring for k in e if isinstance(k, Kill))
    assert plan.block_count(p, "ring") == ExhaustivePlan(workers=(p,)).count()  # unchanged by the sharded ones


def test_the_whole_plan_is_its_blocks_and_covers_the_sharded_strategies():
    everything = ("ring", "ps", "rd", "rabenseifner", "hier", "auto", "native", "zero-ring", "zero-halving")
    plan = ExhaustivePlan(strategies=everything, recoveries=("shrink", "respawn"))
    blocks = list(plan.blocks())
    assert len(blocks) == 3 * 9 * 2 and len(set(blocks)) == len(blocks)
    # 6,534 schedules for each all-reduce strategy, 11,004 for each sharded one (p = 2, 3, 4)
    assert plan.count() == 2 * (7 * (54 + 1566 + 4914) + 2 * (60 + 2484 + 8460)) == 135_492
    one = next(plan.block_cases(3, "zero-halving", "respawn"))
    assert (one.workers, one.strategy, one.recovery) == (3, "zero-halving", "respawn")


@pytest.mark.parametrize("p,recovery", [(2, "shrink"), (3, "shrink"), (3, "respawn"), (4, "respawn")])
def test_with_momentum_a_block_leaves_out_exactly_what_run_refuses(p, recovery):
    from mpibench.engine.optimizer import refusal

    plan = ExhaustivePlan(workers=(p,), strategies=("hsdp",), recoveries=(recovery,), momentum=0.9)
    cases = list(plan.block_cases(p, "hsdp", recovery))
    every = ExhaustivePlan(workers=(p,), strategies=("hsdp",)).block_count(p, "hsdp")
    assert len(cases) == plan.count() and len(cases) + sum(plan.refusals(p, "hsdp", recovery).values()) == every
    assert len({c.case_id for c in cases}) == len(cases)
    for case in cases:
        assert case.extra == ("--momentum", "0.9") and "-m0.9-" in case.case_id
        deadline = dict(case.schedule.options).get("straggler_deadline", 0.0)
        assert refusal("hsdp", 0.9, recovery, case.schedule, deadline) is None
    # one dead owner always leaves the replica: every single kill runs
    assert sum(1 for c in cases if len(c.schedule.kills) == 1 and not c.schedule.partitions) == \
        len(plan.kill_points(p, "hsdp"))


def test_with_momentum_zero_ring_has_no_case_left_every_fault_loses_an_owners_state():
    plan = ExhaustivePlan(workers=(3,), strategies=("zero-ring",), momentum=0.9)
    assert plan.count() == 0
    assert plan.refusals(3, "zero-ring", "shrink") == {"an owner's state has no replica": 2484}


def test_momentum_without_exhaustive_is_bad_input():
    from simrun import run_cli

    proc = run_cli("sweep", "--engine", "sim", "--momentum", "0.9", "--seeds", "1", "--no-replay-on-mpi")
    assert proc.returncode == 2 and "--momentum needs --exhaustive" in proc.stderr, proc.stderr
