"""Launch ``python -m mpibench`` under mpirun as a subprocess with a hard timeout.

A killed or hung rank must never take pytest with it: every launch has a
timeout, and the whole process group is killed when it passes.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

VENV_BIN = Path(sys.executable).parent


def mpirun_command() -> list[str]:
    """The launcher: MPIBENCH_MPIEXEC if set, else the venv's mpirun with this machine's flags."""
    env = os.environ.get("MPIBENCH_MPIEXEC")
    if env:
        return env.split()
    mpirun = VENV_BIN / "mpirun"
    exe = str(mpirun) if mpirun.exists() else shutil.which("mpirun")
    return [exe, "--oversubscribe", "--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1"]


def mpi_env() -> dict:
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Job:
    returncode: int
    stdout: str
    stderr: str
    out: Path | None

    def csv(self, name: str) -> pd.DataFrame:
        return pd.read_csv(self.out / name, keep_default_na=False)

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


def run_mpi(n: int, args: list[str], out: Path | None = None, timeout: float = 120,
            mpirun: list[str] | None = None) -> Job:
    """``mpirun -n N python -m mpibench ARGS [--out OUT]``, killed after ``timeout`` s."""
    cmd = (mpirun or mpirun_command()) + ["-n", str(n), sys.executable, "-m", "mpibench", *args]
    if out is not None:
        cmd += ["--out", str(out)]
    return run_command(cmd, timeout, out)


# Open MPI's launcher occasionally fails before it starts any process (seen in CI,
# two test workers launching at once: "The PMIx server's listener thread failed
# to start", exit 213). That says nothing about the code under test, so such a
# launch is tried again, as the sweep's own launcher does; any other failure,
# and a second launcher failure, is returned as it is.
LAUNCHER_NEVER_STARTED = "listener thread failed to start"
LAUNCHER_RETRY_PAUSE_S = 2.0


def run_command(cmd: list[str], timeout: float, out: Path | None = None, cwd: Path | None = None,
                env: dict | None = None) -> Job:
    """``cmd`` in its own process group, killed after ``timeout`` s (``env``: default mpi_env()),
    started once more when the launcher failed before starting anything."""
    job = _run_once(cmd, timeout, out, cwd, env)
    if job.returncode != 0 and LAUNCHER_NEVER_STARTED in job.stderr and not job.stdout:
        time.sleep(LAUNCHER_RETRY_PAUSE_S)
        job = _run_once(cmd, timeout, out, cwd, env)
    return job


def _run_once(cmd: list[str], timeout: float, out: Path | None, cwd: Path | None,
              env: dict | None) -> Job:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=mpi_env() if env is None else env, start_new_session=True, cwd=cwd)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        stdout, stderr = proc.communicate()
        raise AssertionError(f"timed out after {timeout} s: {' '.join(cmd)}\n{stdout[-3000:]}\n{stderr[-3000:]}")
    return Job(proc.returncode, stdout, stderr, out)


def kill_group(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM the whole process group, SIGKILL it after ``grace_s`` (prterun can ignore TERM)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_cli(args: list[str], timeout: float = 60) -> Job:
    """``python -m mpibench ARGS`` without mpirun (singleton MPI where it needs one)."""
    return run_command([sys.executable, "-m", "mpibench", *args], timeout)
