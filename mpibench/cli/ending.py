"""How a job process ends: within a bounded time once its status is known, and a job that
cannot make progress with one ``stuck:`` line instead of a traceback per rank.

Once the verdict is written, the status is known; what follows (the exit agreement,
``MPI_Finalize``) can still wait for a peer that never comes (Open MPI's finalize was seen to
hang after a clean run, 1 run in 6). A daemon timer then leaves with the verdict's status;
should the interpreter itself be stuck where no Python thread can run (finalizing),
faulthandler's own thread dumps where it was and leaves with status 1, never 0.
"""
from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time

from mpibench.base.exits import EXIT_VIOLATION

# The exit agreement and MPI_Finalize take well under a second when every peer is there;
# a job leaves within 10 s of its verdict (the other ranks' bound: base/folder_watch.py).
EXIT_GRACE_S = float(os.environ.get("MPIBENCH_EXIT_GRACE_S", "5"))
LAST_RESORT_S = 3.0
STUCK_STAGGER_S = 1.0


def bound_exit(code: int, grace_s: float = EXIT_GRACE_S, last_resort_s: float = LAST_RESORT_S) -> None:
    """Arm the timers that end this process with ``code`` if it has not left ``grace_s`` from now."""
    def leave() -> None:
        sys.stderr.write(f"mpibench: this process did not finish leaving within {grace_s:g} s after its "
                         f"verdict; leaving with the verdict's status {code}\n")
        sys.stderr.flush()
        os._exit(code)

    timer = threading.Timer(grace_s, leave)
    timer.daemon = True
    timer.start()
    faulthandler.dump_traceback_later(grace_s + last_resort_s, exit=True)


def stuck_exit(exc: BaseException, rank: int) -> None:
    """A peer gave no answer within the run's deadline and nothing recovers from that here:
    one line for the job, then every rank ends with status 1.

    The first rank to find it claims the run folder's stuck mark and speaks; every other
    rank leaves on that mark (its folder watch, or here when it finds the run stuck too),
    since under ``--with-ft ulfm`` the abort ends the rank that calls it only. Before the
    folder is open, the lowest rank that saw it speaks and its abort ends the rest."""
    from mpi4py import MPI

    from mpibench.base.crash_record import claim_stuck
    from mpibench.base.folder_watch import run_folder

    folder = run_folder()
    if folder is None:
        # 0.2 s per rank was too short under load: a second rank spoke before the abort reached it.
        time.sleep(STUCK_STAGGER_S * min(rank, 10))
    elif not claim_stuck(folder, rank, str(exc)):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_VIOLATION)  # another rank said it first; its mark ends the rest
    sys.stderr.write(f"stuck: rank {rank}: {exc}; the run cannot go on (a larger --deadline-s "
                     f"gives slow peers more time)\n")
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(EXIT_VIOLATION)
    os._exit(EXIT_VIOLATION)
