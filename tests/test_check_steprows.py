"""Every copy of a step's claims is judged: each record told the outcome (every contributor,
a dropped straggler, a stalled member) and the step's row of steps.csv. A lie planted in any
one copy fails the invariant that owns the claim, at the step where it was planted."""
import pytest

from history_builder import Sim, build, find
from mpibench.check import check_run, exit_status
from mpibench.check.invariants import membership

LATE = Sim(delays=[(2, [1, 2], 0.6)], straggler=0.15)
CUT = Sim(world=5, partitions=[([[0, 1, 2], [3, 4]], 1, 3)])


def first(tmp_path, sim=None, tamper=None, tamper_rows=None):
    verdict = check_run(str(build(tmp_path, sim or Sim(), tamper, tamper_rows)))
    v = verdict.first_violation
    return exit_status(verdict), (v.step, v.invariant, v.detail) if v else None


def lie(worker, step, role=None, **claims):
    return lambda files, info: find(files, worker, step, role=role).update(**claims)


def row_lie(at, claims):
    def tamper(rows):
        next(r for r in rows if r["step"] == at).update(**claims)
    return tamper


@pytest.mark.parametrize("sim", [Sim(), LATE, CUT, Sim(kills=[(1, 2)]), Sim(kills=[(2, 3)], recovery="respawn"),
                                 Sim(world=2, partitions=[([[0], [1]], 1, 3)])],
                         ids=["plain", "late", "cut", "kill", "respawn", "split-brain"])
def test_honest_rows_and_copies_pass(tmp_path, sim):
    code, violation = first(tmp_path, sim)
    assert (code, violation) == (0, None)


@pytest.mark.parametrize("sim,worker,step,role,claims,invariant", [
    (Sim(), 2, 3, None, {"effective_batch": 47}, "accounting"),
    (Sim(), 1, 2, None, {"loss_mean": 9.0}, "equivalence"),
    (Sim(), 2, 4, None, {"loss_var": 0.5}, "equivalence"),
    (LATE, 2, 1, "late", {"effective_batch": 99}, "accounting"),
    (LATE, 2, 2, "late", {"loss_mean": 0.125}, "equivalence"),
    (CUT, 4, 1, "stall", {"effective_batch": 1}, "accounting"),
    (CUT, 3, 2, "stall", {"contributing": [0, 1, 2, 3]}, "membership"),
    (CUT, 3, 1, "stall", {"loss_var": 7.0}, "equivalence"),
], ids=["other-contributor-batch", "other-contributor-mean", "other-contributor-var", "late-batch",
        "late-mean", "stalled-batch", "stalled-contributors", "stalled-var"])
def test_a_lie_in_any_record_is_caught(tmp_path, sim, worker, step, role, claims, invariant):
    code, (at, name, detail) = first(tmp_path, sim, lie(worker, step, role, **claims))
    assert (code, at, name) == (1, step, invariant), detail
    assert f"worker {worker}'s" in detail, detail


@pytest.mark.parametrize("step,claims,invariant,needle", [
    (2, {"effective_batch": 40}, "accounting", "claims effective batch 40, the contributing batches hold"),
    (3, {"loss_mean": "0.5"}, "equivalence", "loss mean 0.5"),
    (1, {"loss_var": "0.0"}, "equivalence", "loss variance 0.0"),
    (4, {"loss_mean": ""}, "equivalence", "loss mean None"),
    (2, {"contributing": "0 1"}, "membership", "claims contributors [0 1]"),
    (1, {"excluded": "2:late"}, "membership", "claims left out [2:late], the schedule leaves out []"),
    (3, {"algorithm": "auto:rd"}, "membership", "claims algorithm 'auto:rd'"),
    (2, {"epoch": "1"}, "data", "claims epoch 1, the contributors' walk stands at epoch 0"),
    (2, {"epoch_ends": ""}, "data", "claims epoch ends of [], the walk ends those of"),
    (5, {"members": "0 1 2 3"}, "membership", "claims members [0 1 2 3]"),
    (0, {"effective_batch": "many"}, "membership", "unreadable"),
])
def test_a_lie_in_steps_csv_is_caught_naming_the_line(tmp_path, step, claims, invariant, needle):
    code, (at, name, detail) = first(tmp_path, tamper_rows=row_lie(step, claims))
    assert (code, at, name) == (1, step, invariant), detail
    assert "steps.csv line" in detail and needle in detail, detail


def test_a_row_naming_no_step_of_the_case_is_caught_at_its_end(tmp_path):
    verdict = check_run(str(build(tmp_path, Sim(), tamper_rows=row_lie(3, {"step": "three"}))))
    rows = {(r.step, r.invariant): r.detail for c in verdict.cases for r in c.rows if r.passed is False}
    assert rows[(3, "membership")] == "steps.csv has no row for committed step 3"
    last = Sim().steps - 1
    assert "steps.csv line 5: step 'three' is not a whole number" in rows[(last, "membership")]


def test_a_missing_a_doubled_and_an_invented_row_are_caught(tmp_path):
    def drop(rows):
        rows[:] = [r for r in rows if r["step"] != 2]
    assert first(tmp_path / "a", tamper_rows=drop)[1][:2] == (2, "membership")

    def double(rows):
        rows.append(dict(rows[3]))
    code, (at, name, detail) = first(tmp_path / "b", tamper_rows=double)
    assert (code, at, name) == (1, 3, "membership") and "2 rows for step 3" in detail

    split = Sim(world=2, partitions=[([[0], [1]], 1, 3)])  # nothing commits at steps 1 and 2

    def invent(rows):
        rows.insert(1, dict(rows[0], step=1))
    code, (at, name, detail) = first(tmp_path / "c", split, tamper_rows=invent)
    assert (code, at, name) == (1, 1, "membership") and "no worker committed it" in detail, detail


@pytest.mark.parametrize("sim,step,claims,needle", [
    (LATE, 1, {"excluded": ""}, "the schedule leaves out [2:late]"),
    (CUT, 2, {"excluded": "3:unreachable"}, "the schedule leaves out [3:unreachable 4:unreachable]"),
    (Sim(kills=[(1, 2)]), 4, {"excluded": "1:late"}, "the schedule leaves out [1:dead]"),
])
def test_who_steps_csv_says_was_left_out_is_the_schedules(tmp_path, sim, step, claims, needle):
    code, (at, name, detail) = first(tmp_path, sim, tamper_rows=row_lie(step, claims))
    assert (code, at, name) == (1, step, "membership") and needle in detail, detail


def test_rows_of_other_cases_in_the_same_file_are_not_this_cases(tmp_path):
    def other(rows):
        rows.append(dict(rows[0], scenario="another", effective_batch=3))
    assert first(tmp_path, tamper_rows=other) == (0, None)


def test_a_folder_without_steps_csv_claims_nothing_there(tmp_path):
    out = build(tmp_path, Sim())
    (out / "steps.csv").unlink()
    assert exit_status(check_run(str(out))) == 0


def test_the_checker_reads_steps_csv_with_its_own_reader():
    import mpibench.check.steprows as steprows

    assert membership.presence_problem is steprows.presence_problem
    source = open(steprows.__file__).read()
    assert "import csv" in source and "mpibench.base" not in source and "pandas" not in source
