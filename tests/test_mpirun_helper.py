"""The tests' own launcher helper: a launcher that never started is tried once more,
any other failure is returned as it is."""
from __future__ import annotations

import sys

import pytest

from mpirun import launcher_never_started, run_command


def flaky_launcher(tmp_path, fail_times: int, message: str) -> list[str]:
    """A stand-in launcher that fails ``fail_times`` times with ``message``, then prints ok."""
    counter = tmp_path / "tries"
    script = tmp_path / "launcher.py"
    script.write_text(
        "import pathlib, sys\n"
        f"c = pathlib.Path({str(counter)!r})\n"
        "n = int(c.read_text()) if c.exists() else 0\n"
        "c.write_text(str(n + 1))\n"
        f"if n < {fail_times}:\n"
        f"    sys.stderr.write({message!r}); sys.exit(213)\n"
        "print('ok')\n")
    return [sys.executable, str(script)]


def test_a_launcher_that_never_started_is_tried_once_more(tmp_path):
    job = run_command(flaky_launcher(tmp_path, 1, "The PMIx server's listener thread failed to start"), 30)
    assert (job.returncode, job.stdout.strip()) == (0, "ok")
    assert (tmp_path / "tries").read_text() == "2"


def test_a_second_launcher_failure_is_returned_as_it_is(tmp_path):
    job = run_command(flaky_launcher(tmp_path, 2, "The PMIx server's listener thread failed to start"), 30)
    assert job.returncode == 213
    assert (tmp_path / "tries").read_text() == "2"


def test_any_other_failure_is_not_retried(tmp_path):
    job = run_command(flaky_launcher(tmp_path, 1, "bad input: --steps must be positive"), 30)
    assert job.returncode == 213
    assert (tmp_path / "tries").read_text() == "1"


BOX = ("--------------------------------------------------------------------------\n"
       "The PMIx server's listener thread failed to start. We cannot\n"
       "continue.\n"
       "--------------------------------------------------------------------------\n")


@pytest.mark.parametrize("status, merged, never", [
    (213, BOX, True),
    (213, "[host-1:54875] ptl_tool: problems getting address for index 0 (kernel index -1)\n" + BOX, True),
    (0, BOX, False),                                          # it ran to the end after all
    (213, "calibrating (2 workers)\n" + BOX, False),          # the job had begun
    (1, "Traceback (most recent call last):\n", False),       # a failure of the job's own
])
def test_a_launcher_that_never_started_is_told_from_a_job_that_began(status, merged, never):
    """With stdout and stderr merged, only the launcher's own box and diagnostics may be there."""
    assert launcher_never_started(status, merged) is never
