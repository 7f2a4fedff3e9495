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
disturbed = False
_exit_comm = None  # the membership that leaves together
_pending: list = []  # point-to-point sends that may still be pending at exit


def note_disturbance() -> None:
    global disturbed
    disturbed = True


def leave_with(comm: MPI.Comm) -> None:
    """Name the communicator whose members end the job together (see exit_process)."""
    global _exit_comm
    _exit_comm = comm


def track(request) -> None:
    """A send whose completion nobody waits for (e.g. to a straggler that may never read it)."""
    if len(_pending) > 64:
        _pending[:] = [r for r in _pending if not r.Test()]
    _pending.append(request)


# After a failure, Open MPI's launcher (prterun in recoverable mode) was seen to deadlock
# handling several ranks that end with a non-zero status at once (1 launch in 5 to 15 at
# 8 ranks: every rank gone, prterun waiting for ever on a lock). So only one member, the
# lowest of the exit communicator, carries a non-zero status to the launcher, after the
# others have left; the launcher's status is still the verdict's.
LAST_TO_LEAVE_S = 0.5


def _status_to_leave_with(code: int) -> int:
    if not code:
        return 0
    try:
        lowest = _exit_comm is None or _exit_comm.Get_rank() == 0
    except MPI.Exception:
        lowest = True
    if not lowest:
        return 0
    import time

    time.sleep(LAST_TO_LEAVE_S)
    return code


def exit_process(code: int) -> None:
    """Leave with ``code`` together with the rest of the job.

    Every member of the exit communicator takes part in one last agreement
    (tolerant of anyone already gone), so nobody leaves while a peer still
    waits for a message from it. It must be uniform: a process that skipped
    it (it had seen no failure itself) went straight into MPI_Finalize while
    its peers waited for it in the agreement. The agreement also tells
    everyone whether any member lived through a failure; sends still pending
    (to a straggler that never read them) are cancelled first.

    After a failure, Open MPI's MPI_Finalize can hang: its runtime fence waits
    for the process that died (open-mpi/ompi#9434 describes the mechanism,
    #11404 the hang, still open). Such a job therefore leaves without
    MPI_Finalize once everyone has met in the agreement (nothing is left in
    flight: every communicator's last operation has completed and the output
    is flushed); the launcher still receives each process's exit status. A
    job without failures finalises as usual.
    """
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    for request in _pending:
        try:
            if not request.Test():
                request.Cancel()
        except MPI.Exception:
            pass
    _pending.clear()
    failed_somewhere = disturbed
    if _exit_comm is not None:
        try:
            failed_somewhere = not agree(_exit_comm, not disturbed)
        except Exception:  # noqa: BLE001 - leaving anyway
            failed_somewhere = True
    if failed_somewhere:
        os._exit(_status_to_leave_with(code))
    free(_exit_comm)  # freed only now: the agreement above still needed it


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
    ``ompi_comm_revoke_local`` when the failure notice arrived later).
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
