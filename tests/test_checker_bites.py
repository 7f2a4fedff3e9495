"""The equivalence check catches a mis-weighted reduction on the first uneven step."""
import sys
from pathlib import Path

import pandas as pd
import pytest

from mpirun import mpirun_command, run_cli, run_command

pytestmark = pytest.mark.mpi


def test_mean_of_means_caught_on_first_uneven_step(tmp_path):
    driver = Path(__file__).parent / "drivers" / "unweighted_native.py"
    job = run_command(mpirun_command() + ["-n", "3", sys.executable, str(driver), str(tmp_path)], 90)
    assert job.returncode == 0, job.text
    verdict = run_cli(["check", str(tmp_path)])
    assert verdict.returncode == 1, verdict.text
    steps = pd.read_csv(tmp_path / "steps.csv")
    checks = pd.read_csv(tmp_path / "invariants.csv")
    equivalence = checks[checks.invariant == "equivalence"].set_index("step")
    # With 3 workers and batch size 8, a step is uneven once any batch is short.
    uneven = steps[steps.effective_batch != 3 * 8].step
    assert len(uneven), "the run never had an uneven step; the test proves nothing"
    first_uneven = int(uneven.min())
    failed = equivalence[~equivalence.passed].index
    assert int(failed.min()) == first_uneven
    assert equivalence.loc[:first_uneven - 1].passed.all()  # equal batches: indistinguishable
