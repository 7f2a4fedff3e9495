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

from mpibench.comm import FAILURE_CLASSES

MAX_AGREE_TRIES = 64

# Set once this process has revoked a communicator or lived through a failure.
disturbed = False
_exit_comm = None  # the membership that leaves together
_pending: list = []  # point-to-point sends that may still be pending at exit
FINALIZE_GRACE_S = 8.0


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


def exit_process(code: int) -> None:
    """Prepare this process to leave with ``code``: meet the others, then finalise.

    Every member of the exit communicator takes part in one last agreement
    (tolerant of anyone already gone), so nobody enters MPI_Finalize while a
    peer still waits for a message from it. This must be uniform: a process
    that skipped the agreement (it had seen no failure) went straight into
    MPI_Finalize while its peers waited for it in the agreement, and the job
    ended by the alarm below (exit 142) or hung. Sends still pending (to a
    straggler that never read them) are cancelled first.

    MPI_Finalize then runs as usual (a spawned replacement that skips it makes
    mpirun report an improper exit). After a failure it can still hang inside
    Open MPI (the runtime's fence at finalize waits on the failed process:
    open-mpi/ompi#9434, #11404), so a disturbed process finalises under a
    watch (:func:`finalize_watch`): SIGALRM ends it after ``FINALIZE_GRACE_S``
    with a line on stderr (a non-zero exit instead of a hang; Python threads
    cannot help there, finalisation runs after the interpreter has shut down).
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
    if _exit_comm is not None:
        try:
            agree(_exit_comm, True)
        except Exception:  # noqa: BLE001 - leaving anyway
            pass
    if disturbed:
        finalize_watch(FINALIZE_GRACE_S)


FINALIZE_HUNG = "MPI_Finalize did not return"


def finalize_watch(grace_s: float) -> None:
    """End this process with SIGALRM (exit 142) if it is still alive ``grace_s`` from now,
    saying so on its stderr first.

    A small shell process watches, since nothing in Python runs once MPI_Finalize
    has started; it writes through ``/proc/PID/fd/2`` so it holds none of the
    job's output pipes open (the launcher would wait for them).
    """
    import subprocess

    pid = os.getpid()
    script = (f"sleep {grace_s:g}; kill -0 {pid} 2>/dev/null || exit 0; "
              f"echo '[pid {pid}] {FINALIZE_HUNG} within {grace_s:g} s after a failure "
              f"(open-mpi/ompi#11404); ending the process' > /proc/{pid}/fd/2; kill -ALRM {pid}")
    subprocess.Popen(["sh", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)


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
