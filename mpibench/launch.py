"""Launching ``python -m mpibench`` jobs from a driver (sweep, selftest).

The launcher string comes from ``--mpiexec`` or ``MPIBENCH_MPIEXEC`` (see
:func:`mpibench.config.launcher`). Every job runs in its own process group
with a hard deadline: a job that passes it is killed as a group and reported
as hung, never waited on forever. A driver that is interrupted kills the
jobs it still runs (:func:`kill_all`) instead of leaving them behind. The job's stdout and stderr are kept in
files beside its outputs, so a crash keeps its evidence.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .config import launcher

TAIL_CHARS = 8000  # enough to reach past a native backtrace to the signal line


def launcher_argv(mpiexec: str | None = None) -> list[str]:
    """The launcher as an argument list; a bare ``mpirun`` is looked up beside this Python too."""
    argv = shlex.split(mpiexec.strip() if mpiexec and mpiexec.strip() else launcher())
    if argv and os.sep not in argv[0] and shutil.which(argv[0]) is None:
        beside = Path(sys.executable).parent / argv[0]
        if beside.exists():
            argv[0] = str(beside)
    return argv


def job_env() -> dict:
    """The environment for launched jobs: root allowed, idle ranks yield, output unbuffered."""
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def mpibench_command(mpiexec: list[str], ranks: int, args: list[str]) -> list[str]:
    return [*mpiexec, "-n", str(ranks), sys.executable, "-m", "mpibench", *args]


@dataclass
class JobResult:
    returncode: int | None  # None: killed at the deadline
    wall_s: float
    deadline_s: float
    stdout_tail: str
    stderr_tail: str

    @property
    def hung(self) -> bool:
        return self.returncode is None


def tail(path: Path, chars: int = TAIL_CHARS) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return text[-chars:]


_LIVE: set[subprocess.Popen] = set()  # jobs still running, for kill_all
_LIVE_LOCK = threading.Lock()


def run_job(cmd: list[str], log_dir: Path, deadline_s: float, stalled=None) -> JobResult:
    """Run ``cmd`` with stdout/stderr in ``log_dir``; kill its process group at the deadline,
    or as soon as ``stalled()`` (polled every second, if given) says it stopped making progress."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
    start = time.perf_counter()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=job_env(), start_new_session=True)
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            code = _wait(proc, deadline_s, stalled)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            code = None
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
    return JobResult(code, time.perf_counter() - start, deadline_s, tail(out_path), tail(err_path))


def _wait(proc: subprocess.Popen, deadline_s: float, stalled) -> int:
    if stalled is None:
        return proc.wait(timeout=deadline_s)
    end = time.monotonic() + deadline_s
    while True:
        try:
            return proc.wait(timeout=max(0.0, min(1.0, end - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= end or stalled():
                raise


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def kill_all() -> None:
    """Kill every job this process started that is still running (the driver is stopping)."""
    with _LIVE_LOCK:
        running = list(_LIVE)
    for proc in running:
        _kill_group(proc)


def stop_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt, so a driver stopped by a scheduler cleans up its jobs."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
