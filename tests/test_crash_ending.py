"""A crash on one rank ends the whole job at once, on every launch and on the simulated engine.

Worker 1 raises in its second ring reduction (the plant in ``tests/plugins/crashing``);
the other ranks are then waiting for it inside that reduction. The job must end
well before any deadline could end it (the deadline here is 300 s; the test gives
the job far less), name the rank, the exception and its first traceback lines,
leave a complete folder whose verdict is "cannot judge" naming the crash, and
``run``, ``check DIR`` and the page must agree on exit status 3.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.mpirun import VENV_BIN, mpi_env, run_command
from tests.test_launch_matrix import JOB_ENV, MPICH_BIN, python_of

ROOT = Path(__file__).resolve().parents[1]
PLANT = ROOT / "tests" / "plugins" / "crashing"
DEADLINE = ["--deadline-s", "300"]  # far beyond the test's own limit: only the crash path can end it in time
WITHIN_S = 90  # the test's limit on the whole launch (start-up included, under load)
OPEN_MPI = [str(VENV_BIN / "mpirun"), "-n", "3"]
RUN = ["-m", "mpibench", "run", "--strategy", "ring", "--scenario", "none", "--steps", "6", *DEADLINE]

LAUNCHES = {
    "plain": [*OPEN_MPI, "--oversubscribe"],
    "ulfm": [*OPEN_MPI, "--oversubscribe", "--with-ft", "ulfm"],
    "full": [*OPEN_MPI, "--oversubscribe", "--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1"],
    "mpich": [str(MPICH_BIN / "mpiexec"), "-n", "3"],
}


def crash_env(**extra) -> dict:
    env = {**mpi_env(), "MPIBENCH_TEST_CRASH": "1:2", **extra}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLANT), str(ROOT), env.get("PYTHONPATH")]))
    return env


def _says_the_crash(text: str) -> None:
    assert "rank 1" in text and "ZeroDivisionError: planted: this strategy divided by zero" in text, text[-4000:]
    assert "in _reduce" in text, text[-4000:]  # the traceback's own lines, not only its last
    assert "stuck:" not in text and "no answer" not in text, text[-4000:]


def _judged_as_crash(out: Path) -> None:
    for name in ("run.json", "verdict.json", "invariants.csv", "report.html"):
        assert (out / name).exists(), f"{name} missing from {sorted(p.name for p in out.iterdir())}"
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == "unknown" and verdict["exit_status"] == 3, verdict
    assert "crashed" in verdict["reason"] and "rank 1" in verdict["reason"], verdict["reason"]
    assert "ZeroDivisionError" in verdict["reason"], verdict["reason"]
    check = run_command([sys.executable, "-m", "mpibench", "check", str(out)], timeout=120)
    assert check.returncode == 3, check.text
    assert "crashed" in check.stdout and "ZeroDivisionError" in check.stdout, check.text
    page = (out / "report.html").read_text()
    banner = page[page.index('id="verdict"'):][:3000]
    assert "UNKNOWN" in banner and "crashed: ZeroDivisionError" in banner, banner


# make test keeps the full launch (every flag) and the simulated engine; the rest run in make test-slow.
IN_MAKE_TEST = ("full",)


@pytest.mark.mpi
@pytest.mark.parametrize("launch", [l if l in IN_MAKE_TEST else pytest.param(l, marks=pytest.mark.slow)
                                    for l in LAUNCHES])
def test_a_crash_under_mpirun_ends_the_run_at_once(tmp_path, launch):
    out = tmp_path / "run"
    job = run_command([*LAUNCHES[launch], python_of(launch), *RUN, "--out", str(out)], timeout=WITHIN_S,
                      env=crash_env(), cwd=tmp_path)
    assert job.returncode == 3, job.text[-4000:]
    _says_the_crash(job.text)
    _judged_as_crash(out)


@pytest.mark.mpi
@pytest.mark.slow
def test_a_crash_in_the_self_launched_main_job_ends_it_at_once(tmp_path):
    out = tmp_path / "main"
    env = crash_env(**{**JOB_ENV, "MPIBENCH_SCENARIOS": "none"})
    env.pop("MPIBENCH_MPIEXEC", None)  # the launcher beside this Python, found by the job itself
    job = run_command([sys.executable, "-m", "mpibench", "--np", "3", "--steps", "6", *DEADLINE, "--out", str(out)],
                      timeout=WITHIN_S, env=env, cwd=tmp_path)
    assert job.returncode == 3, job.text[-4000:]
    _says_the_crash(job.text)
    _judged_as_crash(out)


def test_a_crash_on_the_simulated_engine_is_cannot_judge(tmp_path):
    out = tmp_path / "sim"
    job = run_command([sys.executable, *RUN, "--engine", "sim", "--ranks", "3", "--out", str(out)],
                      timeout=WITHIN_S, env=crash_env(), cwd=tmp_path)
    assert job.returncode == 3, job.text[-4000:]
    _says_the_crash(job.text)
    _judged_as_crash(out)
