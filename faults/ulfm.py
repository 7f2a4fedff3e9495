"""The few ULFM calls recovery is built from, each made safe to repeat.

Facts these helpers rely on (checked with Open MPI 5 and ``--with-ft ulfm``):
``Agree`` raises ``ERR_PROC_FAILED`` while a failure is not yet acknowledged,
and returns the AND of the survivors' flags once ``Ack_failed`` has been
called; ``Agree`` and ``Shrink`` work on a revoked communicator; ``Revoke``
makes every pending and later operation on the communicator fail with
``ERR_REVOKED``, which is how ranks blocked on a healthy peer are released.
"""
from __future__ import annotations

import os

from mpi4py import MPI

from mpibench.sync.comm import FAILURE_CLASSES

MAX_AGREE_TRIES = 64

# Set once this process has revoked a communicator or lived through a failure.
# On this machine MPI_Finalize then hung now and then (every survivor spinning
# in ompi_mpi_finalize, about 1 run in 15); see :func:`exit_process`.
disturbed = False
_exit_comm = None  # the membership that leaves together
FINALIZE_GRACE_S = 8.0


def note_disturbance() -> None:
    global disturbed
    disturbed = True


def leave_with(comm: MPI.Comm) -> None:
    """Name the communicator whose members end the job together (see exit_process)."""
    global _exit_comm
    _exit_comm = comm


def exit_process(code: int) -> None:
    """Prepare a disturbed process to leave with ``code``; an undisturbed one needs nothing.

    The members first meet in one last agreement (tolerant of anyone already
    gone), so nobody finalises while a peer still waits for a message from it.
    MPI_Finalize then runs as usual (a spawned replacement that skips it makes
    mpirun report an improper exit), under an alarm: if it hangs, SIGALRM ends
    the process after ``FINALIZE_GRACE_S`` (a non-zero exit instead of a hang;
    Python threads cannot help there, finalisation runs after the interpreter
    has shut down).
    """
    if not disturbed:
        return
    import signal
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    if _exit_comm is not None:
        try:
            agree(_exit_comm, True)
        except Exception:  # noqa: BLE001 - leaving anyway
            pass
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(int(FINALIZE_GRACE_S))


def agree(comm: MPI.Comm, flag: bool) -> bool:
    """The AND of ``flag`` over every live process of ``comm`` (uniform: all get the same)."""
    value = 1 if flag else 0
    for _ in range(MAX_AGREE_TRIES):
        try:
            return bool(comm.Agree(value))
        except MPI.Exception as exc:
            if exc.Get_error_class() not in FAILURE_CLASSES:
                raise
            comm.Ack_failed()
    raise RuntimeError(f"agreement did not complete after {MAX_AGREE_TRIES} tries")


def failed_locally(comm: MPI.Comm) -> bool:
    """Whether this process knows of a failed process in ``comm``."""
    try:
        group = comm.Get_failed()
    except MPI.Exception:
        return True
    try:
        return group.Get_size() > 0
    finally:
        if group != MPI.GROUP_EMPTY:
            group.Free()


def revoke(comm: MPI.Comm | None) -> None:
    """Release everyone blocked on ``comm``; harmless if it is already revoked."""
    if comm is None or comm == MPI.COMM_NULL:
        return
    note_disturbance()
    try:
        comm.Revoke()
    except MPI.Exception:
        pass


def shrink(comm: MPI.Comm) -> MPI.Comm:
    """A new communicator of ``comm``'s live processes, errors returned, not fatal."""
    note_disturbance()
    new = comm.Shrink()
    new.Set_errhandler(MPI.ERRORS_RETURN)
    settle(new)
    return new


def settle(comm: MPI.Comm) -> None:
    """Make sure every member has finished creating ``comm`` before anyone may revoke it.

    Open MPI crashed (segfault in ``ompi_comm_revoke_local``) when a revoke
    for a new communicator reached a process still activating it: a fast rank
    had already used the communicator, failed and revoked it. Nobody leaves
    this barrier before everyone has entered it, i.e. has the communicator.
    """
    comm.Barrier()


_retired: list = []


def free(comm: MPI.Comm | None) -> None:
    """Release a communicator we are done with.

    In a process that has revoked a communicator or lived through a failure the
    communicator is *retired* (kept, never freed): freeing one with requests
    still pending on a dead peer made Open MPI crash (a segfault in
    ``ompi_comm_revoke_local`` when the failure notice arrived later). Such a
    process leaves without MPI_Finalize (:func:`exit_process`), so nothing is
    left to clean up at exit either.
    """
    if comm is None or comm == MPI.COMM_NULL or comm == MPI.COMM_WORLD:
        return
    if disturbed:
        _retired.append(comm)
        return
    try:
        comm.Free()
    except MPI.Exception:
        pass
