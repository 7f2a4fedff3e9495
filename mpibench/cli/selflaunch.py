"""Started without a launcher, the main job starts itself under one.

``python -m mpibench`` run by hand is a single process: as an MPI singleton it
could run only the one-rank scenarios. Instead it finds the launcher the drivers
use (``MPIBENCH_MPIEXEC``, else the ``mpirun`` beside this Python, with Open
MPI's flags for every case), checks that it starts ranks at all, says what it
starts, and runs the main job under it on ``--np`` ranks (default
:data:`DEFAULT_RANKS`: every named scenario fits, and the job stays short). The
job's own exit status is the command's; a launcher that cannot start the job is
"could not run" (exit 3). A launch that failed before the job began (no folder, no
``run.json``, a status none of the job's own) is tried up to twice more, and one line says so each time.
This process never initialises MPI.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time

from mpibench.base.exits import EXIT_COULD_NOT_RUN, EXIT_OK, EXIT_PARTIAL
from mpibench.base.orphan_guard import started_by_launcher
from mpibench.job.outdir import DEFAULT_PARENT

DEFAULT_RANKS = 4  # the largest world any named scenario needs is 3; 4 leaves a majority after a kill
STARTED_HERE = "MPIBENCH_SELF_LAUNCHED"  # set in the launched job: never launch twice
STOP_GRACE_S = 10.0
# A launcher can fail before it starts anything (Open MPI: "The PMIx server's listener
# thread failed to start", exit 213, seen under load); that says nothing about the job,
# so such a launch is tried again after a pause, and once more after a longer one
# (base/launchflags.py's LAUNCH_RETRY_PAUSES_S). A status of the job's own (0-4) or a job
# that made its folder is never retried.
MTIME_SLACK_S = 1.0  # file times lag the clock by a tick; a run.json from 1 s before the launch is not this job's


def under_launcher() -> bool:
    """Whether an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx) started this process."""
    return started_by_launcher() or os.environ.get(STARTED_HERE) == "1"


def launch_main_job(ranks: int | None, args: list[str]) -> int:
    """Run ``python -m mpibench ARGS`` on ``ranks`` ranks under the launcher; its exit status."""
    from mpibench.drive.launch import (LAUNCH_RETRY_PAUSES_S, LaunchError, job_env, mpibench_command,
                                       mpibench_command_text, preflight)

    ranks = ranks or DEFAULT_RANKS
    try:
        launcher = preflight(None, ranks)
    except LaunchError as exc:
        print(f"mpibench: could not run: no launcher started this process, and starting one failed: {exc}",
              file=sys.stderr, flush=True)
        return EXIT_COULD_NOT_RUN
    cmd = mpibench_command(launcher, ranks, args)
    print(f"mpibench: started without a launcher; running the main job on {ranks} ranks "
          f"(--np N or MPIBENCH_MPIEXEC to change):\n  {mpibench_command_text(launcher, ranks, args)}", flush=True)
    env = job_env()
    env[STARTED_HERE] = "1"
    since, fresh = time.time() - MTIME_SLACK_S, JobBegan(args)
    code = _run(cmd, env, fresh, since)
    for pause_s in LAUNCH_RETRY_PAUSES_S:
        if EXIT_OK <= code <= EXIT_PARTIAL or fresh.began(since):
            break
        print(f"mpibench: the launcher ended with status {code} before the job began (no run.json was "
              f"written); trying again in {pause_s:g} s", file=sys.stderr, flush=True)
        time.sleep(pause_s)
        since = time.time() - MTIME_SLACK_S
        code = _run(cmd, env, fresh, since)
    if EXIT_OK <= code <= EXIT_PARTIAL:
        return code
    print(f"mpibench: could not run: the launcher ended with status {code} before the job could report "
          f"a verdict ({shlex.join(cmd)})", file=sys.stderr, flush=True)
    return EXIT_COULD_NOT_RUN


def _run(cmd: list[str], env: dict, fresh: "JobBegan", since: float) -> int:
    """One launch, its output on this terminal; its exit status (the job's own, when the
    launcher outlived the status its job wrote and was ended: drive/launch.py's bound)."""
    from mpibench.drive.status_bound import StatusBound, wait_bounded

    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)
    try:
        return wait_bounded(proc, StatusBound(fresh.candidates, since))
    except KeyboardInterrupt:  # the launcher got the same Ctrl-C; give it time to end its ranks
        _stop(proc)
        raise


class JobBegan:
    """Whether a launch of the main job began it: its folder was made or its run.json written.

    With ``--out DIR`` that folder, else the fresh folders under ``mpibench-out/`` (the
    job's default). Looked at before the launch, so a folder that was already there counts
    only if a new run.json appeared in it."""

    def __init__(self, args: list[str]):
        self.out = _out_of(args)
        self.before = self._folders()

    def _folders(self) -> set[str]:
        if self.out is not None:
            return {self.out} if os.path.isdir(self.out) else set()
        parent = DEFAULT_PARENT
        return {os.path.join(parent, n) for n in os.listdir(parent)} if os.path.isdir(parent) else set()

    def candidates(self) -> list[str]:
        """The folders this launch's job may be writing: ``--out``, else the new ones."""
        now = self._folders()
        return sorted(now if self.out is not None else now - self.before)

    def began(self, since: float) -> bool:
        now = self._folders()
        if now - self.before:
            return True
        return any(_mtime(os.path.join(folder, "run.json")) >= since for folder in now)


def _out_of(args: list[str]) -> str | None:
    """The ``--out`` folder among the main job's arguments (the last one given wins)."""
    out = None
    for i, word in enumerate(args):
        if word == "--out" and i + 1 < len(args):
            out = args[i + 1]
        elif word.startswith("--out="):
            out = word[len("--out="):]
    return out


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return float("-inf")


def _stop(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
