"""Every hand-written strategy against MPI's Allreduce, and in training runs.

The many small cases run inside one mpirun job (tests/sync_driver.py), which
forms communicators of every size from 1 to 8 inside it and covers lengths
0, 1, fewer elements than ranks and uneven ones; launching one job per case
would cost seconds each.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpirun import mpi_env, mpirun_command, run_command

HERE = Path(__file__).parent

pytestmark = pytest.mark.mpi

NEW = ["rd", "rabenseifner", "hier", "auto"]


def test_every_strategy_equals_native_for_every_size_up_to_8():
    cmd = mpirun_command() + ["-n", "8", sys.executable, str(HERE / "sync_driver.py")]
    job = run_command(cmd, timeout=900)  # 405 s seen under make test's load since the sharded cases
    assert job.returncode == 0, job.text[-3000:]
    assert "OK" in job.stdout
    cases = int(job.stdout.split("OK")[1].split()[0])
    assert cases > 1000


def _all_passed(job, steps: int, strategies):
    invariants = job.csv("invariants.csv")
    for strategy in strategies:  # six invariants and the contract at every step of each
        assert len(invariants[invariants.strategy == strategy]) == 7 * steps, strategy
    bad = invariants[invariants.passed.astype(str).str.lower() != "true"]
    assert bad.empty, bad


QUIET_JOB = {"MPIBENCH_SCENARIOS": "none", "MPIBENCH_NO_BENCH": "1", "MPIBENCH_NO_SWEEP": "1"}


def fault_free_runs(tmp_path, workers: int, strategies, args: list[str], timeout: float):
    """One fault-free training run of each strategy, in one launch: the main job narrowed to the
    scenario ``none`` (one launch per strategy cost a start-up each, which is most of such a run)."""
    env = {**mpi_env(), **QUIET_JOB, "MPIBENCH_STRATEGIES": ",".join(strategies)}
    forward = [f for name in [*QUIET_JOB, "MPIBENCH_STRATEGIES"] for f in ("-x", name)]
    cmd = mpirun_command() + forward + ["-n", str(workers), sys.executable, "-m", "mpibench", *args,
                                        "--out", str(tmp_path)]
    job = run_command(cmd, timeout=timeout, out=tmp_path, env=env)
    assert job.returncode == 0, job.text[-3000:]
    assert "Traceback" not in job.text
    steps = job.csv("steps.csv")
    assert sorted(set(steps.strategy)) == sorted(strategies) and (steps.scenario == "none").all(), steps
    return job


def test_training_run_holds_every_invariant(tmp_path):
    strategies = ["ring", "ps"] + NEW
    job = fault_free_runs(tmp_path, 8, strategies, ["--steps", "6", "--bucket-bytes", "256", "--ps-shards", "5"],
                          timeout=240)
    _all_passed(job, 6, strategies)
    steps = job.csv("steps.csv")
    assert all(len(steps[steps.strategy == s]) == 6 for s in strategies), steps


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
def test_new_strategies_at_small_and_odd_worker_counts(tmp_path, workers):
    job = fault_free_runs(tmp_path, workers, NEW, ["--steps", "4", "--seed", str(workers), "--bucket-bytes", "64",
                                                   "--samples", "60", "--batch-size", "8"], timeout=180)
    _all_passed(job, 4, NEW)
    if workers == 3:  # the steps record the algorithm auto and hier chose
        algorithms = job.csv("steps.csv").set_index("strategy").algorithm
        assert algorithms["auto"].str.startswith("auto:").all(), algorithms
        assert algorithms["hier"].str.startswith("hier[1 node x 3]").all(), algorithms
        # hier on one host says that it degenerated
        assert "1 node x 3: no leaders' all-reduce" in job.text


@pytest.mark.parametrize("strategy", ["ring", "ps", "rabenseifner"])
def test_a_misplaced_piece_is_caught_by_coverage(tmp_path, strategy):
    cmd = mpirun_command() + ["-n", "3", sys.executable, str(HERE / "misoffset_driver.py"),
                              "run", "--strategy", strategy, "--steps", "2", "--out", str(tmp_path)]
    job = run_command(cmd, timeout=120, out=tmp_path)
    assert job.returncode == 1, job.text[-3000:]
    invariants = job.csv("invariants.csv")
    coverage = invariants[invariants.invariant == "coverage"]
    assert len(coverage) == 2
    assert (coverage.passed.astype(str).str.lower() == "false").all()
    assert coverage.detail.str.contains("overlap").all()
    assert "violation" in job.stdout
