"""Each invariant on synthetic histories: an honest run passes, one planted mistake fails
exactly the invariant that owns it, at the step where it was planted."""
import base64

import numpy as np
import pytest

from history_builder import Sim, b64, build, digest, find
from mpibench.check import check_run


def judge(tmp_path, sim=None, tamper=None):
    return check_run(str(build(tmp_path, sim or Sim(), tamper)))


def failures(verdict) -> set:
    return {(r.step, r.invariant) for c in verdict.cases for r in c.rows if r.passed is False}


def first(verdict):
    v = verdict.first_violation
    return (v.step, v.invariant) if v else None


def attempts(files, step, roles=("contribute", "late")):
    return [r for recs in files.values() for r in recs
            if r["kind"] == "attempt" and r["step"] == step and r["role"] in roles
            and _decided(recs, r) == "commit"]


def _decided(recs, attempt):
    i = recs.index(attempt)
    nxt = recs[i + 1] if i + 1 < len(recs) else {}
    return nxt.get("decision") if nxt.get("kind") == "decision" else None


@pytest.mark.parametrize("sim", [
    Sim(), Sim(world=1), Sim(world=2, seed=1), Sim(world=5, samples=5, batch_size=1), Sim(seed=7, steps=10),
    Sim(kills=[(1, 2)]), Sim(kills=[(2, 3)], recovery="respawn"), Sim(kills=[(0, 1)], recovery="respawn"),
    Sim(world=5, partitions=[([[0, 1, 2], [3, 4]], 1, 3)]), Sim(world=2, partitions=[([[0], [1]], 1, 3)]),
    Sim(delays=[(2, [1, 2], 0.6)], straggler=0.15), Sim(check_every=3, steps=7)],
    ids=lambda s: f"w{s.world}-s{s.seed}-{s.recovery}-k{len(s.kills)}-p{len(s.partitions)}-d{len(s.delays)}")
def test_honest_histories_pass(tmp_path, sim):
    verdict = judge(tmp_path, sim)
    assert verdict.verdict == "pass", (verdict.reason, verdict.first_violation)
    assert verdict.checks >= 6


def _shift_update(files, step, amount=1e-3):
    """Every committing replica applies a slightly different update at ``step`` (consistently)."""
    new = None
    for r in attempts(files, step):
        if r["full_after"] is not None:
            after = np.frombuffer(base64.b64decode(r["full_after"]), dtype="<f4") + np.float32(amount)
            new = after
    for r in attempts(files, step):
        r["params_after"] = digest(new)
        if r["full_after"] is not None:
            r["full_after"] = b64(new)


def test_equivalence_catches_a_wrong_update(tmp_path):
    verdict = judge(tmp_path, tamper=lambda files, info: _shift_update(files, 3))
    assert first(verdict) == (3, "equivalence")
    assert "differs from the reference" in verdict.first_violation.detail


def test_equivalence_catches_a_step_not_starting_from_the_last_commit_at_any_check_every(tmp_path):
    def tamper(files, info):
        find(files, 1, 3)["params_before"] = "0" * 32
    verdict = judge(tmp_path, Sim(check_every=2), tamper)
    assert first(verdict) == (3, "equivalence")
    assert "not from the commit of step 2" in verdict.first_violation.detail


@pytest.mark.parametrize("every", [2, 4])
def test_the_verdict_of_record_compares_every_step_at_any_check_every(tmp_path, every):
    verdict = judge(tmp_path, Sim(check_every=every), lambda files, info: _shift_update(files, 3))
    assert first(verdict) == (3, "equivalence")
    assert "differs from the reference" in verdict.first_violation.detail


def test_the_online_check_thins_only_the_reference(tmp_path):
    from mpibench.check import check_case

    out = build(tmp_path, Sim(check_every=2), lambda files, info: _shift_update(files, 3))
    case = check_case(str(next((out / "history").iterdir())))  # as during the run: --check-every 2
    rows = {(r.step, r.invariant): r for r in case.rows}
    # Step 3's update is not compared with the reference online; the history checks still run there.
    assert rows[(3, "equivalence")].passed and "reference skipped" in rows[(3, "equivalence")].detail
    assert {(3, n) for n in ("replicas", "accounting", "membership", "data", "coverage", "contract")} <= set(rows)
    # The recorded step 4 started from the honest step-3 parameters, not the planted ones.
    assert (case.first_violation.step, case.first_violation.invariant) == (4, "equivalence")
    assert case.reference_every == 2
    # The job's final verdict judges such a case again in full instead of taking it as it is.
    assert first(check_run(str(out), {case.case: case})) == (3, "equivalence")


def test_replicas_catches_a_diverged_replica(tmp_path):
    verdict = judge(tmp_path, tamper=lambda files, info: find(files, 2, 2).update(params_after="f" * 32))
    assert (2, "replicas") in failures(verdict)


def test_replicas_catches_a_stalled_worker_that_moved(tmp_path):
    sim = Sim(world=3, partitions=[([[0, 1], [2]], 1, 3)])
    verdict = judge(tmp_path, sim, lambda files, info: find(files, 2, 1, role="stall").update(params_after="e" * 32))
    assert (1, "replicas") in failures(verdict)


def test_accounting_catches_a_wrong_effective_batch(tmp_path):
    def tamper(files, info):
        for r in attempts(files, 1):
            r["effective_batch"] += 1
    assert first(judge(tmp_path, tamper=tamper)) == (1, "accounting")


def test_membership_catches_a_live_worker_left_out(tmp_path):
    def tamper(files, info):
        for r in attempts(files, 1):
            r["contributing"] = [0, 1]
    verdict = judge(tmp_path, tamper=tamper)
    assert (1, "membership") in failures(verdict)
    assert "left out: [2]" in [r.detail for r in verdict.cases[0].rows if r.step == 1 and r.invariant == "membership"][0]


def test_membership_catches_a_dead_worker_counted(tmp_path):
    def tamper(files, info):
        for r in attempts(files, 3):
            r["contributing"] = [0, 1, 2]
    verdict = judge(tmp_path, Sim(kills=[(1, 2)]), tamper)
    assert (3, "membership") in failures(verdict)


def test_membership_catches_a_double_commit(tmp_path):
    verdict = judge(tmp_path, tamper=lambda files, info: find(files, 2, 2).update(contributing=[2]))
    rows = {(r.step, r.invariant): r for r in verdict.cases[0].rows}
    assert rows[(2, "membership")].passed is False
    assert "committed twice" in rows[(2, "membership")].detail


def test_membership_catches_a_commit_without_a_majority(tmp_path):
    sim = Sim(world=2, partitions=[([[0], [1]], 1, 3)])

    def tamper(files, info):
        for recs in files.values():
            for r in recs:
                if r.get("step") == 1 and r["kind"] == "decision":
                    r["decision"] = "commit"
    # Stalled workers passing the agreement commit nothing; one that claims it contributed does.
    assert (1, "membership") not in failures(judge(tmp_path, sim, tamper))

    def tamper2(files, info):
        tamper(files, info)
        find(files, 0, 1).update(role="contribute", contributing=[0])
    (tmp_path / "b").mkdir()
    verdict = judge(tmp_path / "b", sim, tamper2)
    rows = {(r.step, r.invariant): r for r in verdict.cases[0].rows}
    assert rows[(1, "membership")].passed is False
    assert "no side holds a strict majority" in rows[(1, "membership")].detail


def test_membership_catches_a_step_that_never_committed(tmp_path):
    def tamper(files, info):
        for recs in files.values():
            for r in recs:
                if r.get("step") == 2 and r["kind"] == "decision":
                    r["decision"] = "skip"
    assert (2, "membership") in failures(judge(tmp_path, tamper=tamper))


def test_data_catches_a_batch_from_the_wrong_place(tmp_path):
    def tamper(files, info):
        r = find(files, 1, 1)
        assert len(r["batch"]) > 1
        r["batch"] = list(reversed(r["batch"]))  # a consistent record of a wrong walk: losses follow
        r["losses"] = b64(np.frombuffer(base64.b64decode(r["losses"]), dtype="<f4")[::-1])
    verdict = judge(tmp_path, tamper=tamper)
    assert first(verdict) == (1, "data")


def test_data_catches_samples_outside_the_shard(tmp_path):
    def tamper(files, info):
        find(files, 1, 0)["batch"] = find(files, 0, 0)["batch"][:len(find(files, 1, 0)["batch"])]
    verdict = judge(tmp_path, tamper=tamper)
    rows = {(r.step, r.invariant): r for r in verdict.cases[0].rows}
    assert rows[(0, "data")].passed is False
    assert "worker 1 used" in rows[(0, "data")].detail and "outside its shard 1" in rows[(0, "data")].detail


def test_data_counts_a_late_workers_batch_as_consumed(tmp_path):
    sim = Sim(delays=[(2, [1], 0.6)], straggler=0.15)
    verdict = judge(tmp_path, sim, lambda files, info: find(files, 2, 1, role="late").update(batch=[]))
    assert (1, "data") in failures(verdict)


def test_coverage_catches_a_gap(tmp_path):
    def tamper(files, info):
        r = find(files, 0, 4)
        r["pieces"] = [[0, r["total_length"] - 1]]
    assert first(judge(tmp_path, tamper=tamper)) == (4, "coverage")


def test_a_check_that_raises_is_unknown_never_a_pass(tmp_path):
    verdict = judge(tmp_path, tamper=lambda files, info: find(files, 0, 2).update(pieces=[[0]]))
    assert verdict.verdict == "unknown"
    assert "coverage at step 2: check raised" in verdict.reason
