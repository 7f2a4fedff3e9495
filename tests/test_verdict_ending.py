"""No job outlives its verdict: a rank that never leaves by itself is ended with the verdict's status.

Rank 1 ignores the ending once its job body has returned (it neither arms its own exit
bound nor enters the exit agreement: the plant in ``tests/plugins/crashing``) and would
sleep for 600 s. The launch must still end, long before that and before the test's own
limit, with the status its verdict says, and the line that ended the rank says why.
"""
from __future__ import annotations

import json

import pytest

from tests.mpirun import VENV_BIN
from tests.test_crash_ending import crash_env, run_command

pytestmark = pytest.mark.mpi

FULL = [str(VENV_BIN / "mpirun"), "-n", "3", "--oversubscribe", "--with-ft", "ulfm", "--prtemca",
        "state_base_recoverable", "1"]
PLAIN = [str(VENV_BIN / "mpirun"), "-n", "3", "--oversubscribe"]
RUNS = {  # id -> (launcher, run arguments, the verdict's status, the launcher's)
    # uneven shards (--samples 100): the replacement now runs the variant too, so only short
    # batches show it (an honest replacement beside unweighted survivors once did)
    "respawn-violation": (FULL, ["--scenario", "kill-before-compute", "--recovery", "respawn", "--run-parts",
                                 "mpibench.selftest.variants:unweighted", "--samples", "100"], 1, 1),
    "respawn-clean": (FULL, ["--scenario", "kill-before-compute", "--recovery", "respawn"], 0, 0),
    # Without --with-ft, Open MPI's launcher reports a rank that left without MPI_Finalize as an
    # abnormal termination (status 1), whatever status it left with: never a pass claimed.
    "plain-clean": (PLAIN, ["--scenario", "none"], 0, 1),
}
WITHIN_S = 120  # the planted rank alone would keep the launch for 600 s


@pytest.mark.parametrize("case", [c if c == "respawn-violation" else pytest.param(c, marks=pytest.mark.slow)
                                  for c in RUNS])
def test_a_rank_that_ignores_the_ending_is_ended_with_the_verdicts_status(tmp_path, case):
    launcher, args, status, launcher_status = RUNS[case]
    out = tmp_path / "run"
    cmd = [*launcher, str(VENV_BIN / "python"), "-m", "mpibench", "run", "--strategy", "ring", "--steps", "6",
           *args, "--out", str(out)]
    env = crash_env(MPIBENCH_TEST_IGNORE_ENDING="1")
    env.pop("MPIBENCH_TEST_CRASH")
    job = run_command(cmd, timeout=WITHIN_S, env=env, cwd=tmp_path)
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["exit_status"] == status, verdict
    assert json.loads((out / "exit-status.json").read_text()) == {"exit_status": status}
    assert job.returncode == launcher_status, job.text[-3000:]
    # The planted rank, or a peer still waiting for it in the exit agreement, was ended by its watch.
    # (or, where the planted rank's own bounded exit fired first, by that: either ends it with the status)
    assert ("had not left; the job's status was known" in job.stderr
            or "did not finish leaving within 5 s after its verdict" in job.stderr), job.text[-3000:]
    assert "Traceback" not in job.text
