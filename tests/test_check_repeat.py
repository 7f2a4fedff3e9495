"""Twenty identical respawn runs with a planted violation: every one ends in verdict 1 and
none hangs past its deadline, whatever the launcher's own exit status was."""
import json
from collections import Counter

import pytest

from mpirun import run_cli, run_mpi

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

RUNS = 20
SCHEDULE = 'name = "kill2at3"\n[[kill]]\nrank = 2\nstep = 3\nphase = "mid_reduction"\nmessages = 1\n'


def test_twenty_respawn_runs_with_a_planted_violation_all_fail(tmp_path):
    schedule = tmp_path / "kill2at3.toml"
    schedule.write_text(SCHEDULE)
    launcher, verdicts = Counter(), Counter()
    for i in range(RUNS):
        out = tmp_path / f"run-{i}"
        job = run_mpi(3, ["run", "--run-parts", "mpibench.selftest.variants:resume-epoch-start",
                          "--strategy", "ring", "--scenario", str(schedule),
                          "--recovery", "respawn", "--steps", "6", "--samples", "100"], out, timeout=120)
        checked = run_cli(["check", str(out)], timeout=120)
        launcher[job.returncode] += 1
        verdicts[checked.returncode] += 1
        first = json.loads((out / "verdict.json").read_text())["first_violation"]
        assert checked.returncode == 1 and (first["step"], first["invariant"]) == (1, "data"), \
            f"run {i}: check exited {checked.returncode}\n{checked.text}\n{job.text[-2000:]}"
    print(f"launcher exit statuses {dict(launcher)}; check exit statuses {dict(verdicts)}")
