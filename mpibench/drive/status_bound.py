"""A launch that outlived the status its job wrote is ended by the driver that started it.

Once a job has written its status (``exit-status.json``, after its verdict and its page),
its ranks' own bounds end them within 5 s (8 s at the last resort: ``cli/ending.py``,
``base/folder_watch.py``). A launcher still running :data:`LAUNCH_AFTER_STATUS_S` after that
(a launcher's teardown that never ends) is ended here, in one line, and the job's status is
the one it wrote: the self-launched main job (:func:`wait_bounded`) and each case a driver
runs (``launch.run_job``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

LAUNCH_AFTER_STATUS_S = float(os.environ.get("MPIBENCH_LAUNCH_AFTER_STATUS_S", "8"))
STATUS_NAME = "exit-status.json"
POLL_S = 0.5


class StatusBound:
    """Whether a launch outlived the status its job wrote: ``folders()`` gives the run
    folders the job may write (its ``exit-status.json``); only a status written since
    ``since`` (the launch's start) counts."""

    def __init__(self, folders, since: float, bound_s: float | None = None):
        self.folders, self.since = folders, since
        self.bound_s = LAUNCH_AFTER_STATUS_S if bound_s is None else bound_s
        self.code: int | None = None

    def overdue(self) -> bool:
        for folder in self.folders():
            path = os.path.join(folder, STATUS_NAME)
            try:
                written = os.stat(path).st_mtime
                with open(path) as fh:
                    code = int(json.load(fh)["exit_status"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if written >= self.since and time.time() - written > self.bound_s:
                self.code = code
                return True
        return False

    def said(self) -> str:
        return (f"mpibench: the launcher had not ended {self.bound_s:g} s after its job wrote its status "
                f"({self.code}); ended it, the job's status stands\n")


class Overdue(Exception):
    """The launch outlived its job's status."""


def wait_bounded(proc: subprocess.Popen, bound: StatusBound) -> int:
    """``proc``'s status, or, once it outlived its job's status by ``bound``, that status
    (the launcher ended, one line on stderr)."""
    while True:
        try:
            return proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            if bound.overdue():
                break
    kill_launcher(proc)
    sys.stderr.write(bound.said())
    sys.stderr.flush()
    return bound.code


def kill_launcher(proc: subprocess.Popen, grace_s: float = 2.0) -> None:
    """End a launcher that shares this process's group (Ctrl-C reaches it with this one):
    SIGTERM, then SIGKILL; its ranks see their launcher gone and end (base/orphan_guard.py)."""
    for kill in (proc.terminate, proc.kill):
        kill()
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()
