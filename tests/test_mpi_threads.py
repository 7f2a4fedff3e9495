"""bench starts MPI with the thread support asked for and says so; the choice cannot be made
once MPI has started otherwise."""
from __future__ import annotations

import subprocess
import sys

import pytest

from mpirun import mpi_env, mpirun_command, run_command

AFTER_START = """
from mpi4py import MPI
from mpibench.base.mpi_threads import AlreadyStarted, ask_for, provided_level
ask_for(provided_level())  # the level it has: nothing to do
try:
    ask_for("single" if provided_level() != "single" else "multiple")
except AlreadyStarted as exc:
    print("REFUSED", exc)
"""


@pytest.mark.mpi
@pytest.mark.parametrize("asked", ["multiple", "single", None])
def test_bench_runs_with_the_thread_level_asked_for_and_says_which(tmp_path, asked):
    args = ["bench", "--sizes", "4K", "--strategies", "ring", "--rounds", "1", "--iterations", "2", "--warmup", "1",
            "--no-model", "--c-baseline", "off", "--out", str(tmp_path / "out")]
    args += [] if asked is None else ["--thread-level", asked]
    job = run_command([*mpirun_command(), "-n", "2", sys.executable, "-m", "mpibench", *args], timeout=120)
    assert job.returncode == 0, job.text[-3000:]
    header = next(line for line in job.stdout.splitlines() if line.startswith("# MPI thread level:"))
    level = asked or "multiple"  # mpi4py's default
    assert header == f"# MPI thread level: {level} (provided {level})", header


def test_a_level_asked_for_after_mpi_started_otherwise_is_refused():
    done = subprocess.run([sys.executable, "-c", AFTER_START], capture_output=True, text=True, timeout=60,
                          env=mpi_env())
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("REFUSED MPI was started with thread support"), done.stdout


def test_an_unknown_level_is_refused_before_anything_starts():
    from mpibench.base.mpi_threads import ask_for

    with pytest.raises(ValueError, match="one of multiple, single"):
        ask_for("funneled")
