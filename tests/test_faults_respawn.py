"""A respawn the launcher cannot honour ends as "could not run", in one line.

``mpirun -n 2`` on exactly two slots leaves no room for a replacement: the
survivors' ``Spawn`` fails. That is a property of the allocation, not a
defect of the reduction, so the job says so once and the verdict is
"cannot judge" (exit 3), never a pass or a violation.
"""
from __future__ import annotations

import sys

import pytest

from tests.mpirun import mpirun_command, run_cli, run_command

pytestmark = pytest.mark.mpi


def two_slots_only() -> list[str]:
    """The test launcher without --oversubscribe, on a host list of exactly two slots."""
    cmd = [a for a in mpirun_command() if a != "--oversubscribe"]
    return cmd + ["--host", "localhost:2"]


@pytest.mark.parametrize("scenario", ["kill-before-compute", "kill-coordinator"])
def test_refused_spawn_is_could_not_run(tmp_path, scenario):
    out = tmp_path / "run"
    cmd = two_slots_only() + ["-n", "2", sys.executable, "-m", "mpibench", "run", "--scenario", scenario,
                              "--recovery", "respawn", "--steps", "6", "--out", str(out)]
    job = run_command(cmd, timeout=120)
    lines = [line for line in job.stderr.splitlines() if line.startswith("mpibench: could not run:")]
    assert job.returncode != 0, job.text
    assert len(lines) == 1, job.text
    assert "--oversubscribe" in lines[0] and "Traceback" not in job.text
    verdict = run_cli(["check", str(out)])
    assert verdict.returncode == 3, verdict.text
    assert "cannot judge" in verdict.text
