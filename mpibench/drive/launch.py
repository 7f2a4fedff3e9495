"""Launching ``python -m mpibench`` jobs from a driver (sweep, selftest).

The launcher string comes from ``--mpiexec`` or ``MPIBENCH_MPIEXEC``; without
either, the ``mpirun`` beside this Python (the virtual environment's) or on the
PATH is used, and for Open MPI with the flags ``make run`` uses (oversubscribe,
so more ranks than cores start; ULFM; spawned replacements recoverable).
:func:`preflight` starts a trivial job first, so a launcher that cannot start
the jobs is reported as "could not run" instead of as every case failing. Every job runs in its own process group
with a hard deadline: a job that passes it is killed as a group and reported
as hung, never waited on forever; a job that wrote its status (``exit-status.json``) but
whose launcher has not ended :data:`LAUNCH_AFTER_STATUS_S` later is killed as a group too,
said in one line, and its status is the one it wrote (:mod:`.status_bound`). A driver that is interrupted kills the
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

from mpibench.base.launchflags import LAUNCH_RETRY_PAUSES_S, LAUNCHER_NEVER_STARTED
from mpibench.base.launchflags import OPEN_MPI_FLAGS  # what `make run` passes to the embedded Open MPI 5
from mpibench.base.launch_command import command, command_text, driver_launch

from .status_bound import Overdue, StatusBound

TAIL_CHARS = 8000  # enough to reach past a native backtrace to the signal line

PREFLIGHT_TIMEOUT_S = 90.0


class LaunchError(RuntimeError):
    """The launcher cannot start jobs here: the driver could not run (exit status 3)."""


def launcher_argv(mpiexec: str | None = None) -> list[str]:
    """The launcher as an argument list: ``mpiexec``, else ``MPIBENCH_MPIEXEC``, else discovered.

    A bare program name is looked up on the PATH, then beside this Python (a virtual
    environment's ``bin`` need not be on the PATH), and given as an absolute path.
    """
    given = (mpiexec or "").strip() or os.environ.get("MPIBENCH_MPIEXEC", "").strip()
    if not given:
        return discovered_launcher()
    argv = shlex.split(given)
    if argv:  # absolute, so that every printed command runs as pasted from anywhere
        beside = Path(sys.executable).parent / argv[0]
        found = argv[0] if os.sep in argv[0] else shutil.which(argv[0]) or (str(beside) if beside.exists() else None)
        argv[0] = os.path.abspath(found) if found else argv[0]
    return argv


def discovered_launcher() -> list[str]:
    """This Python's ``mpirun`` (else the PATH's), with Open MPI's flags when it is Open MPI."""
    beside = Path(sys.executable).parent / "mpirun"
    exe = str(beside) if beside.exists() else shutil.which("mpirun")
    if exe is None:
        return ["mpirun"]  # preflight names what is missing
    return [exe, *OPEN_MPI_FLAGS] if is_open_mpi(exe) else [exe]


def is_open_mpi(exe: str) -> bool:
    try:
        text = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL, env=job_env()).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "Open MPI" in text or "prte" in text.lower()


def preflight(mpiexec: str | None, ranks: int, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> list[str]:
    """Start ``ranks`` trivial MPI processes with the launcher; LaunchError if that fails.

    A trial that failed with Open MPI's :data:`LAUNCHER_NEVER_STARTED` is tried up to twice more
    (:data:`LAUNCH_RETRY_PAUSES_S`); any other failure is reported at once."""
    argv = launcher_argv(mpiexec)
    if not argv or (shutil.which(argv[0]) is None and not os.access(argv[0], os.X_OK)):
        raise LaunchError(f"no launcher {argv[0] if argv else '(empty)'!r}: install the embedded-mpi extra "
                          "('make venv') or give --mpiexec / MPIBENCH_MPIEXEC")
    code, output = _trial(argv, ranks, timeout_s)
    for pause_s in LAUNCH_RETRY_PAUSES_S:
        if code == 0 or LAUNCHER_NEVER_STARTED not in output:
            break
        time.sleep(pause_s)
        code, output = _trial(argv, ranks, timeout_s)
    if code != 0:
        lines = [line.strip() for line in output.splitlines() if line.strip() and not set(line.strip()) <= set("-*=")]
        hint = ("; add --oversubscribe to the launcher (more ranks than slots)"
                if "slots" in output and "--oversubscribe" not in argv else "")
        gist = " | ".join(lines[:3])[:300]
        raise LaunchError(f"'{shlex.join(argv)} -n {ranks}' exited {code}: {gist}{hint}")
    return argv


def _trial(argv: list[str], ranks: int, timeout_s: float) -> tuple[int, str]:
    """(exit status, output) of ``ranks`` processes meeting at one barrier."""
    cmd = [*argv, "-n", str(ranks), sys.executable, "-c", "from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, env=job_env(), start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        raise LaunchError(f"'{shlex.join(argv)}' did not start {ranks} ranks within {timeout_s:g} s") from None
    except BaseException:  # interrupted: the trial job must not outlive the driver
        _kill_group(proc)
        raise
    return proc.returncode, output


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
    """The job's command line, runnable as pasted (:func:`mpibench.base.launch_command.command`:
    the numeric environment first, the launcher by its absolute path, this Python)."""
    return command(driver_launch(mpiexec), ranks, args)


def mpibench_command_text(mpiexec: list[str], ranks: int, args: list[str]) -> str:
    """:func:`mpibench_command` as one line that runs as pasted into a clean shell
    (:func:`mpibench.base.launch_command.command_text`)."""
    return command_text(driver_launch(mpiexec), ranks, args)


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


def run_job(cmd: list[str], log_dir: Path, deadline_s: float, stalled=None, run_dir: Path | None = None) -> JobResult:
    """Run ``cmd`` with stdout/stderr in ``log_dir``; kill its process group at the deadline,
    or as soon as ``stalled()`` (polled every second, if given) says it stopped making progress,
    or (``run_dir``: the job's run folder) once it outlived the status it wrote there."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
    start = time.perf_counter()
    bound = StatusBound(lambda: [str(run_dir)], time.time() - 1.0) if run_dir is not None else None
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=job_env(), start_new_session=True)
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            code = _wait(proc, deadline_s, stalled, bound)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            code = None
        except Overdue:
            _kill_group(proc, grace_s=2.0)
            proc.wait()
            err.write(bound.said())
            err.flush()
            code = bound.code
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
    return JobResult(code, time.perf_counter() - start, deadline_s, tail(out_path), tail(err_path))


# A launcher that fails before starting anything (seen here: "The PMIx server's
# listener thread failed to start", exit 213, under heavy load) says nothing about
# the case it was given. Such a launch is tried up to twice more, after a short
# pause and then a longer one (the failure was seen twice in a row on a busy host);
# a third failure is reported as it is (the pauses: base.launchflags.LAUNCH_RETRY_PAUSES_S).
EARLIER_TRIES = ("first-launch", "second-launch")  # where each failed try's output is kept


def run_job_again_if_unstarted(cmd: list[str], log_dir: Path, deadline_s: float, started,
                               stalled=None, run_dir: Path | None = None) -> JobResult:
    """:func:`run_job`, run again (up to twice) when it failed and ``started()`` says
    nothing of the job had begun (its output folder was never made). Each failed
    try's output is kept beside the last one's (``*.first-launch.txt``,
    ``*.second-launch.txt``)."""
    job = run_job(cmd, log_dir, deadline_s, stalled, run_dir)
    for pause_s, kept_as in zip(LAUNCH_RETRY_PAUSES_S, EARLIER_TRIES):
        if job.hung or job.returncode == 0 or started():
            return job
        for name in ("stdout.txt", "stderr.txt"):
            (log_dir / name).replace(log_dir / name.replace(".txt", f".{kept_as}.txt"))
        time.sleep(pause_s)
        job = run_job(cmd, log_dir, deadline_s, stalled, run_dir)
    return job


POLL_S = 0.5


def _wait(proc: subprocess.Popen, deadline_s: float, stalled, bound: StatusBound | None = None) -> int:
    """The job's status; TimeoutExpired at the deadline or once ``stalled()``, Overdue once
    ``bound`` says the launch outlived its job's status."""
    if stalled is None and bound is None:
        return proc.wait(timeout=deadline_s)
    end, stall_at = time.monotonic() + deadline_s, time.monotonic() + 1.0
    while True:
        try:
            return proc.wait(timeout=max(0.0, min(POLL_S, end - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= end:
                raise
            if stalled is not None and time.monotonic() >= stall_at:
                stall_at = time.monotonic() + 1.0
                if stalled():
                    raise
            if bound is not None and bound.overdue():
                raise Overdue() from None


def _kill_group(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM the job's whole process group, then SIGKILL what is left after ``grace_s``
    (a stuck launcher can ignore SIGTERM)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            try:  # the launcher is gone; its ranks may not be
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return


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
