"""Differential testing (mpibench.sim.twin): the same cases on the simulated engine and on MPI.

A short slice of the matrix runs here as one real launch (a batch of three cases: a cascade
of two kills under ps with respawn, a kill mid-reduction under auto with shrink, a dropped
straggler under rd); each case's correctness rows, verdict and outcome must be the same on both
engines. The whole matrix (every named scenario x 7 strategies x 2 recoveries x p = 2, 3, 4) is
``lab/studies/sim_twin.py``, run here by a slow test (``make test-slow``); the comparison itself is
checked to see a one-value difference.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mpibench.sim.twin import first_difference, matrix_cases

from simrun import ROOT, run_driver

SLICE = ["cascade:ps:respawn:3", "kill-mid-reduction:auto:shrink:3", "straggler-dropped:rd:shrink:3"]


def test_a_slice_of_the_matrix_gives_the_same_rows_on_both_engines(tmp_path):
    found = run_driver("sim_twin_slice.py", str(tmp_path), *SLICE, timeout_s=400)
    assert len(found) == 3
    for case, result in found.items():
        assert result["difference"] == "", f"{case}: {result}"
        assert result["sim"] == result["mpi"] == "ok", f"{case}: {result}"


# The overlapped step (run --overlap: each layer's bucket an Iallreduce started during the backward
# pass) on both engines: a kill with a bucket in flight under respawn, a dropped straggler, a healed cut.
OVERLAPPED = ["kill-mid-reduction:native:respawn:3:overlap", "straggler-dropped:native:shrink:3:overlap",
              "partition-heal:native:respawn:3:overlap"]


@pytest.mark.mpi
def test_overlapped_cases_give_the_same_rows_on_both_engines(tmp_path):
    found = run_driver("sim_twin_slice.py", str(tmp_path), *OVERLAPPED, timeout_s=400)
    assert len(found) == 3 and all(case.endswith("-overlap") for case in found)
    for case, result in found.items():
        assert result["difference"] == "", f"{case}: {result}"
        assert result["sim"] == result["mpi"] == "ok", f"{case}: {result}"
    assert matrix_cases((3,), ("native",), ("shrink",), scenarios=["none"], extra=("--overlap",))[0].extra == (
        "--overlap",)


def test_one_changed_value_or_a_missing_row_is_a_difference():
    rows = {"steps.csv": [{"step": "0", "loss": "0.5"}], "invariants.csv": [], "faults.csv": [], "verdict": "pass"}
    assert first_difference(rows, rows) == ""
    changed = {**rows, "steps.csv": [{"step": "0", "loss": "0.50000001"}]}
    assert "steps.csv row 1 loss" in first_difference(rows, changed)
    assert "rows" in first_difference(rows, {**rows, "steps.csv": []})
    assert "verdict" in first_difference(rows, {**rows, "verdict": "fail"})


def test_the_matrix_holds_every_named_scenario_strategy_recovery_and_size():
    cases = matrix_cases()
    assert {c.strategy for c in cases} == {"ring", "ps", "rd", "rabenseifner", "hier", "auto", "native"}
    assert {c.recovery for c in cases} == {"shrink", "respawn"} and {c.workers for c in cases} == {2, 3, 4}
    assert len({c.case_id for c in cases}) == len(cases) == 574


@pytest.mark.slow  # the whole matrix: 574 cases on both engines, about 40 minutes on 2 loaded cores
@pytest.mark.timeout(5400)
def test_the_whole_matrix_gives_the_same_rows_on_both_engines(tmp_path):
    """lab/studies/sim_twin.py over every named scenario x 7 strategies x 2 recoveries x p = 2, 3, 4:
    every case identical on both engines (a difference is printed with both replay commands)."""
    proc = subprocess.run([sys.executable, str(ROOT / "lab" / "studies" / "sim_twin.py"), str(tmp_path / "twin")],
                          cwd=ROOT, capture_output=True, text=True, timeout=5300)
    written = tmp_path / "twin" / "twin.json"
    assert written.exists(), f"no twin.json (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    summary = json.loads(written.read_text())
    assert summary["cases"] == len(matrix_cases()) == 574, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert summary["differing"] == 0, json.dumps(summary["differences"], indent=1)[-3000:] + proc.stdout[-3000:]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
