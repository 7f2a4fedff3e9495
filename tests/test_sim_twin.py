"""Differential testing (mpibench.sim.twin): the same cases on the simulated engine and on MPI.

A short slice of the matrix runs here as one real launch (a batch of three cases: a cascade
of two kills under ps with respawn, a kill mid-reduction under auto with shrink, a dropped
straggler under rd); each case's correctness rows, verdict and outcome must be the same on both
engines. The whole matrix (every named scenario x 7 strategies x 2 recoveries x p = 2, 3, 4) is
``benchmarks/sim_twin.py``; the comparison itself is checked to see a one-value difference.
"""
from __future__ import annotations

from pathlib import Path

from mpibench.sim.twin import first_difference, matrix_cases

from simrun import run_driver

SLICE = ["cascade:ps:respawn:3", "kill-mid-reduction:auto:shrink:3", "straggler-dropped:rd:shrink:3"]


def test_a_slice_of_the_matrix_gives_the_same_rows_on_both_engines(tmp_path):
    found = run_driver("sim_twin_slice.py", str(tmp_path), *SLICE, timeout_s=400)
    assert len(found) == 3
    for case, result in found.items():
        assert result["difference"] == "", f"{case}: {result}"
        assert result["sim"] == result["mpi"] == "ok", f"{case}: {result}"


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
