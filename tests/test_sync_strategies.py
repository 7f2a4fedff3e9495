"""Ring all-reduce and parameter server against MPI's Allreduce, and in training runs.

The many small cases run inside one mpirun job (tests/sync_driver.py), which
forms communicators of every size from 1 to 8 inside it; launching one job
per case would cost seconds each.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpirun import mpirun_command, run_command, run_mpi

HERE = Path(__file__).parent

pytestmark = pytest.mark.mpi


def test_ring_and_ps_equal_native_for_every_size_up_to_8():
    cmd = mpirun_command() + ["-n", "8", sys.executable, str(HERE / "sync_driver.py")]
    job = run_command(cmd, timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    assert "OK" in job.stdout
    cases = int(job.stdout.split("OK")[1].split()[0])
    assert cases > 400


@pytest.mark.parametrize("strategy", ["ring", "ps"])
def test_training_run_holds_every_invariant(tmp_path, strategy):
    job = run_mpi(8, ["run", "--strategy", strategy, "--steps", "6", "--bucket-bytes", "256",
                      "--ps-shards", "5"], out=tmp_path, timeout=180)
    assert job.returncode == 0, job.text[-3000:]
    invariants = job.csv("invariants.csv")
    assert len(invariants) == 6 * 6
    assert (invariants.passed.astype(str).str.lower() == "true").all(), invariants[invariants.passed.astype(str).str.lower() != "true"]
    steps = job.csv("steps.csv")
    assert (steps.strategy == strategy).all() and len(steps) == 6
    assert "Traceback" not in job.text


@pytest.mark.parametrize("strategy", ["ring", "ps"])
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
