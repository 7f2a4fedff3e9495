"""The history contract on synthetic histories: every record of every role is judged.

Each test plants one breach of ``mpibench/check/CONTRACT.md`` in an honest history and
expects a ``contract`` violation at that step naming the worker; the honest histories
(tests/test_check_invariants.py) and the kills the schedule explains pass.
"""
import base64
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from history_builder import Sim, b64, build, find
from mpibench.check import check_run

CUT = Sim(world=3, partitions=[([[0, 1], [2]], 1, 3)])  # worker 2 stalls at steps 1 and 2
LATE = Sim(delays=[(2, [1, 2], 0.6)], straggler=0.15)  # worker 2 dropped as late at steps 1 and 2
KILL = Sim(kills=[(2, 2)])  # worker 2 dies at step 2; the others abort and redo it


def judge(tmp_path, sim, tamper=None):
    return check_run(str(build(tmp_path, sim, tamper)))


def rows(verdict) -> dict:
    return {(r.step, r.invariant): r for r in verdict.cases[0].rows}


def breach(verdict, step: int, text: str) -> None:
    row = rows(verdict)[(step, "contract")]
    assert row.passed is False, row
    assert text in row.detail, row.detail
    assert verdict.verdict == "fail"


def records(files, worker, kind="attempt"):
    return [r for name, recs in sorted(files.items()) if recs[0]["worker"] == worker for r in recs
            if r["kind"] == kind]


@pytest.mark.parametrize("sim", [CUT, LATE, KILL, Sim(kills=[(2, 3)], recovery="respawn")],
                         ids=["cut", "late", "kill", "respawn"])
def test_the_honest_schedules_hold_the_contract(tmp_path, sim):
    verdict = judge(tmp_path, sim)
    assert verdict.verdict == "pass", verdict.first_violation
    assert all(r.passed for r in verdict.cases[0].rows if r.invariant == "contract")


def test_a_stalled_record_that_claims_a_batch(tmp_path):
    def tamper(files, info):
        find(files, 2, 1, role="stall")["batch"] = find(files, 2, 0)["batch"]
    breach(judge(tmp_path, CUT, tamper), 1, "worker 2 step 1 attempt 0: stalled, yet claims a batch of 16")


def test_a_stalled_record_whose_cursor_moved(tmp_path):
    def tamper(files, info):
        find(files, 2, 2, role="stall")["cursor_after"] = [0, 99]
    breach(judge(tmp_path, CUT, tamper), 2, "stalled, yet its cursor moved")


def test_a_stalled_worker_counted_as_contributing(tmp_path):
    def tamper(files, info):
        r = find(files, 2, 1, role="stall")
        r["contributing"] = [0, 1, 2]
    breach(judge(tmp_path, CUT, tamper), 1, "stalled, yet counted as contributing")


def test_a_late_worker_counted_as_contributing(tmp_path):
    def tamper(files, info):
        find(files, 2, 1, role="late")["contributing"] = [0, 1, 2]
    breach(judge(tmp_path, LATE, tamper), 1, "dropped as late, yet counted as contributing")


def test_a_late_worker_whose_batch_is_not_consumed(tmp_path):
    def tamper(files, info):
        r = find(files, 2, 1, role="late")
        r["cursor_after"] = r["cursor_before"]
    breach(judge(tmp_path, LATE, tamper), 1, "worker 2 step 1 attempt 0: cursor after")


def test_an_aborted_attempt_with_a_batch_from_elsewhere(tmp_path):
    def tamper(files, info):
        aborted = find(files, 0, 2)  # attempt 0, decision retry: the kill was seen
        aborted["batch"] = find(files, 0, 0)["batch"]
    breach(judge(tmp_path, KILL, tamper), 2, "aborted with a batch that is not the slice at its cursor")


def test_a_retry_that_is_never_redone_by_a_live_worker(tmp_path):
    def tamper(files, info):
        recs = files["worker-0.jsonl"]
        redo = [i for i, r in enumerate(recs) if r.get("step") == 2 and r.get("attempt") == 1]
        del recs[redo[0]:redo[-1] + 1]  # the redo's attempt and decision
    breach(judge(tmp_path, KILL, tamper), 2, "'retry' but the step is never attempted again")


def test_a_rollback_that_does_not_restore_the_parameters(tmp_path):
    def tamper(files, info):
        find(files, 1, 2)["params_after"] = "a" * 32  # the aborted attempt's update ...
        redo = [r for r in records(files, 1) if r["step"] == 2 and r["attempt"] == 1][0]
        redo["params_before"] = "a" * 32  # ... kept by the redo
    breach(judge(tmp_path, KILL, tamper), 2, "starts from parameters aaaaaaaaaaaa")


@pytest.mark.parametrize("field", ["full_after", "losses"])
def test_a_live_committing_worker_without_its_evidence_is_a_violation_not_unknown(tmp_path, field):
    def tamper(files, info):
        find(files, 1, 3)[field] = None
    verdict = judge(tmp_path, Sim(), tamper)
    breach(verdict, 3, "worker 1 step 3 attempt 0: live and committing, yet recorded no")


def test_a_live_worker_with_no_record_of_a_step(tmp_path):
    def tamper(files, info):
        recs = files["worker-2.jsonl"]
        files["worker-2.jsonl"] = [r for r in recs if r.get("step") != 1]
    breach(judge(tmp_path, CUT, tamper), 1, "worker 2 (worker-2.jsonl) is alive at step 1 but recorded nothing")


def test_a_killed_workers_missing_records_are_explained(tmp_path):
    verdict = judge(tmp_path, Sim(kills=[(2, 2)]))
    assert verdict.verdict == "pass"  # worker 2's file stops at step 1: its kill explains it


def test_a_replacement_without_a_scheduled_kill(tmp_path):
    sim = Sim(kills=[(2, 3)], recovery="respawn")

    def tamper(files, info):
        info["schedule"]["kills"][0]["step"] = 4  # the file joined at 3 now has no kill to explain it
    verdict = judge(tmp_path, sim, tamper)
    assert verdict.verdict == "fail"
    assert any(r.invariant == "contract" and not r.passed and "where no kill is scheduled" in r.detail
               for r in verdict.cases[0].rows)


def test_workers_that_disagree_on_the_outcome(tmp_path):
    def tamper(files, info):
        for r in files["worker-1.jsonl"]:
            if r["kind"] == "decision" and r["step"] == 4:
                r["decision"] = "skip"
    breach(judge(tmp_path, Sim(), tamper), 4, "workers disagree on the step's outcome")


def test_contributors_that_name_different_algorithms(tmp_path):
    def tamper(files, info):
        for w, alg in ((0, "auto:rd"), (1, "auto:rd"), (2, "auto:rabenseifner")):
            find(files, w, 2)["algorithm"] = alg
    breach(judge(tmp_path, Sim(), tamper), 2, "contributors reduced with different algorithms")


def test_an_attempt_without_decision_inside_a_file(tmp_path):
    def tamper(files, info):
        recs = files["worker-1.jsonl"]
        recs.remove(next(r for r in recs if r["kind"] == "decision" and r["step"] == 2))
    verdict = judge(tmp_path, Sim(), tamper)
    breach(verdict, 2, "no decision recorded, yet the file goes on")


# ---------------------------------------------------------------------------- values
def test_a_nan_count_is_an_accounting_violation_at_its_step(tmp_path):
    def tamper(files, info):
        for w in range(3):
            find(files, w, 2)["effective_batch"] = math.nan
    verdict = judge(tmp_path, Sim(), tamper)
    assert rows(verdict)[(2, "accounting")].passed is False


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_non_finite_parameter_never_passes_the_reference(tmp_path, value):
    def tamper(files, info):
        for w in range(3):
            r = find(files, w, 2)
            params = np.frombuffer(base64.b64decode(r["full_after"]), dtype="<f4").copy()
            params[5] = value
            r["full_after"] = b64(params)
            from history_builder import digest
            r["params_after"] = digest(params)
        for w in range(3):
            find(files, w, 3)["params_before"] = find(files, w, 2)["params_after"]
    verdict = judge(tmp_path, Sim(), tamper)
    assert verdict.first_violation.step == 2 and verdict.first_violation.invariant == "equivalence"
    assert "element 5" in verdict.first_violation.detail


@pytest.mark.parametrize("offset", [3e-8, -5e-8])
def test_loss_statistics_off_by_float32_accumulation_error_are_caught(tmp_path, offset):
    def tamper(files, info):
        for w in range(3):
            find(files, w, 1)["loss_mean"] += offset  # far inside the float32 tolerance of ~2e-5
    verdict = judge(tmp_path, Sim(), tamper)
    assert (verdict.first_violation.step, verdict.first_violation.invariant) == (1, "equivalence")
    assert "float64 over the recorded losses" in verdict.first_violation.detail


def test_recorded_losses_that_are_not_the_models_are_caught(tmp_path):
    def tamper(files, info):
        r = find(files, 0, 1)
        losses = np.frombuffer(base64.b64decode(r["losses"]), dtype="<f4").copy()
        losses[0] += np.float32(0.01)
        r["losses"] = b64(losses)
    verdict = judge(tmp_path, Sim(), tamper)
    assert "recorded per-sample loss 0" in rows(verdict)[(1, "equivalence")].detail


@settings(max_examples=25, deadline=None)
@given(field=st.sampled_from(["batch", "cursor_after", "contributing", "params_after"]), step=st.sampled_from([1, 2]))
def test_any_false_claim_of_a_stalled_record_is_a_violation(tmp_path_factory, field, step):
    """Whatever a stalled record claims beyond 'I kept my parameters and consumed nothing' fails."""
    def tamper(files, info):
        r = find(files, 2, step, role="stall")
        r[field] = {"batch": [1, 2, 3], "cursor_after": [0, 7], "contributing": [0, 1, 2],
                    "params_after": "c" * 32}[field]
    verdict = judge(tmp_path_factory.mktemp("h"), CUT, tamper)
    assert rows(verdict)[(step, "contract")].passed is False


@pytest.mark.parametrize("sim,stalled", [
    (Sim(world=3, partitions=[([[0, 1], [2]], 1, 3)]), 2),
    (Sim(world=5, samples=5, batch_size=1, partitions=[([[0, 1, 2], [3, 4]], 1, 3)]), 4),  # one sample each
    (Sim(world=5, seed=3, partitions=[([[1, 2, 3], [0, 4]], 2, 4)]), 0),  # worker 0 on the stalled side
], ids=["w3", "w5-one-sample-shards", "w5-worker0-stalled"])
def test_a_stalled_claim_is_caught_at_any_world_size(tmp_path, sim, stalled):
    start = sim.partitions[0][1]
    assert judge(tmp_path / "honest", sim).verdict == "pass"

    def tamper(files, info):
        find(files, stalled, start, role="stall")["batch"] = [0]
    breach(judge(tmp_path / "planted", sim, tamper), start, f"worker {stalled} step {start}")
