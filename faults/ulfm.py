"""The few ULFM calls recovery is built from, each made safe to repeat.

Facts these helpers rely on (checked with Open MPI 5 and ``--with-ft ulfm``):
``Agree`` raises ``ERR_PROC_FAILED`` while a failure is not yet acknowledged,
and returns the AND of the survivors' flags once ``Ack_failed`` has been
called; ``Agree`` and ``Shrink`` work on a revoked communicator; ``Revoke``
makes every pending and later operation on the communicator fail with
``ERR_REVOKED``, which is how ranks blocked on a healthy peer are released.
"""
from __future__ import annotations

from mpi4py import MPI

from mpibench.comm import FAILURE_CLASSES

MAX_AGREE_TRIES = 64

# Set once this process has revoked a communicator or lived through a failure. On this
# machine MPI_Finalize then hung now and then (all survivors spinning in
# ompi_mpi_finalize, about 1 run in 15), so such a process leaves without it: see
# :func:`exit_process`.
disturbed = False


def note_disturbance() -> None:
    global disturbed
    disturbed = True


def exit_process(code: int) -> None:
    """End a disturbed process with ``code`` without MPI_Finalize (mpirun still reports
    the code); an undisturbed one returns and finalises normally."""
    if not disturbed:
        return
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


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
    return new


def free(comm: MPI.Comm | None) -> None:
    """Free a recovered or revoked communicator; freeing never fails the run.

    Communicators left allocated after a revoke once made a process crash at
    exit, so every replaced communicator goes through here.
    """
    if comm is None or comm == MPI.COMM_NULL or comm == MPI.COMM_WORLD:
        return
    try:
        comm.Free()
    except MPI.Exception:
        pass
