"""run --overlap under every named scenario and both recoveries: the checker's verdict holds.

Simulated (fast, one child process): every scenario of ``python -m mpibench scenarios`` x shrink
and respawn on 3 ranks under ``native`` (the strategy that overlaps), each judged as a sweep case
is, its case.json recording the overlap, and each beside the same case without ``--overlap``:
the rows must be the same (the buckets change when the sums travel, not what they are), kills
included. On MPI (real mpirun jobs, hard timeouts): a kill in the middle of an overlapped
reduction under both recoveries, a dropped straggler and a healed partition.
"""
from __future__ import annotations

import json

import pytest

from mpibench.faults.scenarios import ALL_SCENARIOS
from mpirun import run_mpi
from simrun import run_driver

CASES = [f"{s}:{r}" for s in ALL_SCENARIOS for r in ("shrink", "respawn")]
KILLED_MID_REDUCTION = {"kill-mid-reduction": 2, "kill-coordinator": 2, "kill-ps-server": 1, "cascade": 1,
                        "kill-mid-scatter": 1}  # messages (started buckets) before the kill


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> dict:
    return run_driver("sim_overlap_matrix.py", str(tmp_path_factory.mktemp("overlap")), timeout_s=300)


@pytest.mark.parametrize("case", CASES)
def test_every_scenario_and_recovery_holds_every_invariant_overlapped(matrix, case):
    overlapped, blocking = matrix[case]["overlapped"], matrix[case]["blocking"]
    assert overlapped["outcome"] == "ok", f"{case}: {overlapped['first']}\n{overlapped['replay']}"
    assert overlapped["overlap"] is True and blocking["overlap"] is False  # recorded in the case's config
    assert overlapped["checks"] > 0 and overlapped["checks"] == blocking["checks"]
    assert overlapped["steps"] == blocking["steps"] and overlapped["faults"] == blocking["faults"], case
    scenario = case.split(":")[0]
    if scenario in KILLED_MID_REDUCTION:
        kill = next(f for f in overlapped["faults"] if f["kind"] == "kill" and f["phase"] == "mid_reduction")
        assert f"after {KILLED_MID_REDUCTION[scenario]} message(s)" in kill["detail"], kill


def test_the_matrix_is_every_named_scenario_under_both_recoveries(matrix):
    assert set(matrix) == set(CASES) and len(CASES) == 2 * len(ALL_SCENARIOS) >= 38


def overlapped_run(tmp_path, scenario: str, recovery: str, timeout: float = 240):
    job = run_mpi(3, ["run", "--strategy", "native", "--overlap", "--scenario", scenario, "--recovery", recovery,
                      "--steps", "5"], tmp_path, timeout=timeout)
    assert job.returncode == 0, job.text[-4000:]
    assert "Traceback" not in job.text and "stuck:" not in job.text, job.text[-4000:]
    assert json.loads((tmp_path / "verdict.json").read_text())["verdict"] == "pass"
    checks = job.csv("invariants.csv")
    assert len(checks) and (checks.passed.astype(str) == "True").all(), checks[checks.passed.astype(str) != "True"]
    case, = (tmp_path / "history").glob("*/case.json")
    assert json.loads(case.read_text())["config"]["overlap"] is True
    return job


@pytest.mark.mpi
@pytest.mark.timeout(300)
@pytest.mark.parametrize("recovery", ["shrink", "respawn"])
def test_a_kill_inside_an_overlapped_bucket_is_recovered_on_mpi(tmp_path, recovery):
    job = overlapped_run(tmp_path, "kill-mid-reduction", recovery)
    faults = job.csv("faults.csv")
    kill = faults[faults.kind == "kill"]
    assert list(kill.phase) == ["mid_reduction"] and "after 2 message(s)" in kill.detail.iloc[0]
    steps = job.csv("steps.csv")
    assert list(steps.step) == list(range(5))
    if recovery == "respawn":
        assert (faults.kind == "respawn").any() and steps.members.iloc[-1] == "0 1 2"
    else:
        assert steps.members.iloc[-1] == "0 1"


@pytest.mark.mpi
@pytest.mark.timeout(300)
@pytest.mark.parametrize("scenario", ["straggler-dropped", "partition-heal"])
def test_a_straggler_and_a_partition_overlapped_on_mpi(tmp_path, scenario):
    job = overlapped_run(tmp_path, scenario, "shrink")
    steps = job.csv("steps.csv")
    assert list(steps.step) == list(range(5))
    assert (steps.effective_batch < 48).any()  # a step committed without the late or cut-off worker
