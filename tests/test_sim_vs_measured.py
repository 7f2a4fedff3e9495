"""lab/studies/sim_vs_measured.py's rows: one per launch and strategy, the reduction part by part."""
import subprocess
import sys
from pathlib import Path

import pytest

from mpibench.sim.hostreplay import Comparison

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lab" / "studies"))
import sim_vs_measured as svm  # noqa: E402

CAL = {"alpha_s": 5e-6, "alpha_step_s": 6e-5, "beta_s_per_byte": 2e-10, "beta_step_s_per_byte": 3e-10}
MEASURED = {"step_s": 1e-3, "compute_s": 2e-4, "sync_s": 4e-4, "rest_s": 3e-4, "evidence_s": 1e-4, "check_s": 3e-5}


@pytest.mark.parametrize("simulated_step_s, within", [(1.2e-3, True), (1.25e-3, True), (1.3e-3, False),
                                                      (0.7e-3, False)])
def test_a_row_says_whether_the_launch_is_within_25_percent(simulated_step_s, within):
    c = Comparison("ring", 2, MEASURED, {**MEASURED, "step_s": simulated_step_s, "sync_s": 5e-4}, (0.8, 0.9, 1.0))
    parts = {"network": 1.5e-4, "latency": 1.2e-4, "bandwidth": 2e-5, "reduction": 1e-5}
    row = svm.csv_row("1", Path("launch-3"), c, parts, CAL)
    assert row["within_25_pct"] is within and row["launch"] == "launch-3"
    assert row["simulated_over_measured"] == pytest.approx(simulated_step_s / 1e-3, abs=1e-3)
    assert (row["latency_us"], row["bandwidth_us"], row["reduction_us"]) == (120.0, 20.0, 10.0)
    assert row["python_us"] == pytest.approx(350.0)  # the simulated reduction less the network's share
    assert row["alpha_step_us"] == 60.0 and row["cpu_scale"] == 0.9


def test_a_row_without_a_simulated_step_is_never_within():
    row = svm.csv_row("1", Path("l"), Comparison("ps", 2, MEASURED, {}, ()), {}, CAL)
    assert row["within_25_pct"] is False and row["simulated_over_measured"] is None and "latency_us" not in row


def test_writing_needs_a_job_name(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "lab" / "studies" / "sim_vs_measured.py"), str(tmp_path), "--write"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
