"""A respawn the launcher cannot honour is found before the case starts and left out.

``mpirun -n 2`` on exactly two slots leaves no room for a replacement. That is
a property of the allocation, not a defect of the reduction: the launch probe
sees no free slot, the case is recorded as not run with what it needs, and the
status is partial (exit 4), never a pass or a violation.
"""
from __future__ import annotations

import json
import sys

import pytest

from tests.mpirun import mpirun_command, run_cli, run_command

pytestmark = pytest.mark.mpi


def two_slots_only() -> list[str]:
    """The test launcher without --oversubscribe, on a host list of exactly two slots."""
    cmd = [a for a in mpirun_command() if a != "--oversubscribe"]
    return cmd + ["--host", "localhost:2"]


@pytest.mark.parametrize("scenario", ["kill-before-compute", "kill-coordinator"])
def test_respawn_without_a_free_slot_is_not_run(tmp_path, scenario):
    out = tmp_path / "run"
    cmd = two_slots_only() + ["-n", "2", sys.executable, "-m", "mpibench", "run", "--scenario", scenario,
                              "--recovery", "respawn", "--steps", "6", "--out", str(out)]
    job = run_command(cmd, timeout=120)
    assert job.returncode == 4, job.text  # found by the launch probe before the case started
    assert "spawn: no free slot: 2 rank(s) fill the 2 slot(s)" in job.stdout, job.text
    assert f"needs --oversubscribe (or more slots than ranks): each replacement needs a free slot: " \
           f"{scenario}/native/respawn" in job.stdout and "Traceback" not in job.text
    phase = json.loads((out / "phases" / f"000-{scenario}-native-respawn.json").read_text())
    assert phase["status"] == "not_run" and "--oversubscribe" in phase["needs"]
    verdict = run_cli(["check", str(out)])
    assert verdict.returncode != 0, verdict.text  # a case that did not run is never a pass
