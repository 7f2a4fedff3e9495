"""A rank whose launcher is gone ends itself instead of living on.

Open MPI's launcher starts every rank in a process group of its own, so killing the
launcher's group (a test's deadline, a user's ``kill -9 -PGID``) leaves the ranks
behind, reparented; one blocked in MPI then waits forever (seen: 18 minutes in a futex
wait). Each process a launcher started notes its parent (the launcher, or the daemon
that forked it: ``prterun``/``prted``, MPICH's proxy, ``slurmstepd``) when it starts,
and a daemon thread checks once a second that the parent is still the same. Once it
is not, the rank prints one line and ends with "could not run" (exit 3). The parent of
a rank never changes while its launcher lives, for the first ranks, respawned ones
and Slurm's alike, so nothing else can set it off. A process that no launcher started
(a singleton, a driver) is left alone: its parent may end and it should go on.
"""
from __future__ import annotations

import os
import sys
import threading

from .exits import EXIT_COULD_NOT_RUN

# What an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx) puts in a rank's environment.
LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "PMI_FD")
POLL_S = 1.0


def started_by_launcher() -> bool:
    return any(name in os.environ for name in LAUNCHER_VARIABLES)


def guard_if_launched(poll_s: float = POLL_S) -> threading.Thread | None:
    """Start the watch in a process a launcher started; None (and no thread) otherwise."""
    if not started_by_launcher():
        return None
    return start(poll_s)


def start(poll_s: float = POLL_S) -> threading.Thread:
    """Watch this process's parent from now on; end the process once it changes."""
    parent = os.getppid()
    stop = threading.Event()  # never set: the thread lives as long as the process

    def watch() -> None:
        while not stop.wait(poll_s):
            if os.getppid() != parent:
                _end(parent)

    thread = threading.Thread(target=watch, name="mpibench-orphan-guard", daemon=True)
    thread.start()
    return thread


def _end(parent: int) -> None:
    rank = next((os.environ[v] for v in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK") if v in os.environ), "?")
    try:
        sys.stderr.write(f"mpibench: rank {rank} (pid {os.getpid()}): its launcher (parent pid {parent}) "
                         f"is gone; ending this rank (exit {EXIT_COULD_NOT_RUN})\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr went with the launcher
        pass
    os._exit(EXIT_COULD_NOT_RUN)
