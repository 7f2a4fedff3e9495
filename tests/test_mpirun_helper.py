"""The tests' own launcher helper: a launcher that never started is tried again, up to twice
more; any other failure, and a third launcher failure, is returned as it is."""
from __future__ import annotations

import sys

import pytest

import mpirun
from mpirun import launcher_never_started, run_command


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    """The stand-in fails at once; the helper's real pauses (2 s, 6 s) would only be waited out."""
    monkeypatch.setattr(mpirun, "LAUNCHER_RETRY_PAUSES_S", (0.0, 0.0))


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


def test_a_launcher_that_failed_twice_is_tried_a_third_time(tmp_path):
    job = run_command(flaky_launcher(tmp_path, 2, "The PMIx server's listener thread failed to start"), 30)
    assert (job.returncode, job.stdout.strip()) == (0, "ok")
    assert (tmp_path / "tries").read_text() == "3"


def test_a_third_launcher_failure_is_returned_as_it_is(tmp_path):
    job = run_command(flaky_launcher(tmp_path, 3, "The PMIx server's listener thread failed to start"), 30)
    assert job.returncode == 213
    assert (tmp_path / "tries").read_text() == "3"


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


STEP_ABORT_LOG = """mpibench job 9: 4 tasks on vm (4 CPUs advertised, 2 cores here)
  launcher: srun --mpi=pmix  python: /venv/bin/python
  output:   /tmp/results/mpibench-9
srun: launch/slurm: launch_p_step_launch: StepId=9.0 aborted before step completely launched.
srun: Job step aborted: Waiting up to 7 seconds for job step to finish.
srun: error: task 0 launch failed: Unspecified error
srun: error: task 1 launch failed: Unspecified error
verdict: unknown, cannot judge: no run.json in /tmp/results/mpibench-9 (0 case(s), 0 checks, 0 violation(s))
"""


@pytest.mark.parametrize("log, never", [
    (STEP_ABORT_LOG, True),
    # a task of the job spoke after the abort: it ran, so the submission stands as it is
    (STEP_ABORT_LOG.replace("srun: error: task 1", "mpibench: error: --steps must be at least 1\nsrun: error: task 1"),
     False),
    (STEP_ABORT_LOG.replace("aborted before step completely launched", "launched"), False),  # no abort
    ("mpibench: error: --steps must be at least 1, got -3\nsrun: error: vm: tasks 0-3: Exited with exit code 2\n",
     False),
    ("", False),
])
def test_an_srun_step_that_never_launched_is_told_apart(log, never):
    from slurm_cluster import step_never_launched

    assert step_never_launched(log) is never
