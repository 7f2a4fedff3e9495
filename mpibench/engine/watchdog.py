"""A per-step watchdog: a run that stops making progress ends, with a diagnostic.

Data-plane waits have deadlines (``Comm.wait``), but control-plane calls such as
ULFM's agreement and the evidence gather block until every member arrives. A
rank that hangs without dying would hold the survivors there forever; the
watchdog bounds a whole step (all its attempts and recoveries) instead, and
ends the job with the step and the members when the bound passes.
"""
from __future__ import annotations

import os
import sys
import threading


class StepWatchdog:
    def __init__(self, budget_s: float, abort=None):
        self.budget_s = budget_s
        self._abort = abort or _abort_job
        self._timer: threading.Timer | None = None

    def arm(self, step: int, members) -> None:
        self.disarm()
        message = (f"step {step} made no progress for {self.budget_s:g} s on members "
                   f"{' '.join(map(str, members))}; aborting the job")
        self._timer = threading.Timer(self.budget_s, self._abort, args=(message,))
        self._timer.daemon = True
        self._timer.start()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def budget_for(deadline_s: float) -> float:
    """A step may retry and recover several times, each bounded by the deadline."""
    return max(10.0 * deadline_s, 5.0)


def _abort_job(message: str) -> None:
    """Leave at once with status 1; every member's own watchdog does the same.

    ``MPI_Abort`` from this thread was seen to let mpirun exit 0 when several
    ranks aborted together under ``state_base_recoverable``; a non-zero process
    exit always fails the job.
    """
    from mpi4py import MPI

    from mpibench.base.runinfo import this_host

    sys.stderr.write(f"[{MPI.COMM_WORLD.Get_rank()}@{this_host()}] stuck: {message}\n")
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(1)
