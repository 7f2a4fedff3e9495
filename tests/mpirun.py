"""Launch ``python -m mpibench`` under mpirun as a subprocess with a hard timeout.

A killed or hung rank must never take pytest with it: every launch has a
timeout, and the whole process group is killed when it passes.
"""
from __future__ import annotations

import os
import re
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
    tag: str = ""  # every process of the launch carries it (processes_tagged)

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
# launch is tried again, as the sweep's own launcher does; any other failure is
# returned as it is. The failures come in bursts (a fresh-clone run saw one launch
# fail twice, two seconds apart), so the test helpers try twice more, after longer
# pauses, and return a third launcher failure as it is.
LAUNCHER_NEVER_STARTED = "listener thread failed to start"
LAUNCHER_RETRY_PAUSES_S = (2.0, 6.0)


def run_command(cmd: list[str], timeout: float, out: Path | None = None, cwd: Path | None = None,
                env: dict | None = None) -> Job:
    """``cmd`` in its own process group, killed after ``timeout`` s (``env``: default mpi_env()),
    started again (up to twice more) when the launcher failed before starting anything."""
    return again_if_never_started(lambda: _run_once(cmd, timeout, out, cwd, env))


def again_if_never_started(run):
    """``run()``, and ``run()`` again (up to twice more) while its result (``returncode``,
    ``stdout``, ``stderr``) says the launcher failed before it started anything
    (:func:`launcher_never_started`)."""
    done = run()
    for pause_s in LAUNCHER_RETRY_PAUSES_S:
        if not launcher_never_started(done.returncode, done.stdout, done.stderr):
            break
        time.sleep(pause_s)
        done = run()
    return done


def launcher_never_started(returncode: int, stdout: str, stderr: str = "") -> bool:
    """The launch failed and all it said was the launcher's own start-up failure: no line of
    the job's own came out (with the streams merged, ``stdout`` holds only the launcher's box)."""
    if returncode == 0 or LAUNCHER_NEVER_STARTED not in stdout + stderr:
        return False
    own = [line for line in stdout.splitlines() if line.strip() and not _launcher_box_line(line)]
    return not own


# Open MPI's help box (a dashed rule, two lines of text, a rule) and its own diagnostics,
# which begin "[host:pid] " (e.g. "ptl_tool: problems getting address" before the box).
_LAUNCHER_DIAGNOSTIC = re.compile(r"^\[[^\]\s]+:\d+\] ")


def _launcher_box_line(line: str) -> bool:
    text = line.strip()
    return (set(text) == {"-"} or "PMIx server" in text or text == "continue."
            or bool(_LAUNCHER_DIAGNOSTIC.match(text)))


def _run_once(cmd: list[str], timeout: float, out: Path | None, cwd: Path | None,
              env: dict | None) -> Job:
    env, tag = tagged(mpi_env() if env is None else env)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True, cwd=cwd)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        stdout, stderr = proc.communicate()
        left = reap_survivors(tag)
        raise AssertionError(f"timed out after {timeout} s: {' '.join(cmd)}\n{stdout[-3000:]}\n{stderr[-3000:]}"
                             + (f"\nstill running after the kill (now killed): {left}" if left else ""))
    return Job(proc.returncode, stdout, stderr, out, tag)


# Every process of a launch carries this variable (a launcher passes its environment to
# the ranks it starts, respawned ones too), so what a kill left behind can be found.
LAUNCH_TAG = "MPIBENCH_TEST_LAUNCH"


def tagged(env: dict) -> tuple[dict, str]:
    """``env`` with a tag of its own for one launch; the tag."""
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    return {**env, LAUNCH_TAG: tag}, tag


def processes_tagged(tag: str) -> dict[int, str]:
    """The live processes whose environment carries ``tag``: pid -> command line."""
    needle = f"{LAUNCH_TAG}={tag}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle not in fh.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue  # ended, not yet reaped by its new parent
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                found[int(entry)] = fh.read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            continue
    return found


def reap_survivors(tag: str, grace_s: float = 10.0) -> dict[int, str]:
    """Wait up to ``grace_s`` for every process tagged ``tag`` to end; SIGKILL those that
    did not and return them (empty: nothing of the launch outlived it)."""
    end = time.monotonic() + grace_s
    left = processes_tagged(tag)
    while left and time.monotonic() < end:
        time.sleep(0.2)
        left = processes_tagged(tag)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


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
