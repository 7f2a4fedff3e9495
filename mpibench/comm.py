"""The communicator the sync strategies talk through: buffer calls with deadlines.

Every wait polls its requests against a deadline, so a peer that never answers
becomes a :class:`PeerLate` error instead of a hang, and MPI errors from a dead
peer (ULFM's ``ERR_PROC_FAILED``/``ERR_REVOKED``) become :class:`PeerFailed`.
Strategies learn about faults only through these exceptions. The fault
injection wrapper in ``mpibench.faults`` wraps this class and keeps its
interface.

Ranks have two names: the position in the current communicator (``rank``) and
the stable worker id (``worker_ids[rank]``), which survives shrinking and is
what records and invariants talk about.
"""
from __future__ import annotations

import time
from typing import Sequence

from mpi4py import MPI


class CommError(Exception):
    """A data-plane operation could not complete; ``peers`` are worker ids involved."""

    reason = "error"

    def __init__(self, message: str, peers: Sequence[int] = ()):
        super().__init__(message)
        self.peers = tuple(peers)


class PeerFailed(CommError):
    reason = "failed"


class PeerUnreachable(CommError):
    reason = "unreachable"


class PeerLate(CommError):
    reason = "late"


FAILURE_CLASSES = {
    getattr(MPI, name) for name in ("ERR_PROC_FAILED", "ERR_PROC_FAILED_PENDING", "ERR_REVOKED")
    if hasattr(MPI, name)
}


def translate(exc: MPI.Exception, peers: Sequence[int]) -> CommError:
    if exc.Get_error_class() in FAILURE_CLASSES:
        return PeerFailed(f"peer failure ({exc.Get_error_string()})", peers)
    return CommError(f"MPI error: {exc.Get_error_string()}", peers)


class Comm:
    """Deadline-bounded buffer operations over an MPI communicator."""

    def __init__(self, mpi_comm: MPI.Comm, worker_ids: Sequence[int] | None = None,
                 deadline_s: float = 60.0):
        self.mpi = mpi_comm
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()
        self.worker_ids = tuple(worker_ids) if worker_ids is not None else tuple(range(self.size))
        self.deadline_s = deadline_s

    @property
    def worker_id(self) -> int:
        return self.worker_ids[self.rank]

    # -- hooks for wrappers: the plain communicator ignores them
    def mark(self, step: int, phase: str) -> None:
        """Tell the communicator where the worker loop stands."""

    # -- waiting
    def wait(self, requests: list, peers: Sequence[int]) -> None:
        """Wait for all ``requests`` or raise once the deadline passes."""
        deadline = time.monotonic() + self.deadline_s
        spins = 0
        try:
            while not MPI.Request.Testall(requests):
                spins += 1
                if spins > 64:
                    if time.monotonic() > deadline:
                        for request in requests:
                            if request != MPI.REQUEST_NULL:
                                request.Cancel()
                        raise PeerLate(f"no answer within {self.deadline_s:g} s",
                                       [self.worker_ids[p] for p in peers])
                    time.sleep(0 if spins < 1000 else 0.0002)
        except MPI.Exception as exc:
            raise translate(exc, [self.worker_ids[p] for p in peers]) from None

    # -- point to point (data plane)
    def sendrecv(self, sendbuf, dest: int, recvbuf, source: int, tag: int = 0) -> None:
        try:
            requests = [self.mpi.Irecv(recvbuf, source, tag), self.mpi.Isend(sendbuf, dest, tag)]
        except MPI.Exception as exc:
            raise translate(exc, [self.worker_ids[dest], self.worker_ids[source]]) from None
        self.wait(requests, (dest, source))

    def send(self, buf, dest: int, tag: int = 0) -> None:
        try:
            request = self.mpi.Isend(buf, dest, tag)
        except MPI.Exception as exc:
            raise translate(exc, [self.worker_ids[dest]]) from None
        self.wait([request], (dest,))

    def recv(self, buf, source: int, tag: int = 0) -> None:
        try:
            request = self.mpi.Irecv(buf, source, tag)
        except MPI.Exception as exc:
            raise translate(exc, [self.worker_ids[source]]) from None
        self.wait([request], (source,))

    def isend(self, buf, dest: int, tag: int = 0):
        return self._start(self.mpi.Isend, buf, dest, tag)

    def irecv(self, buf, source: int, tag: int = 0):
        return self._start(self.mpi.Irecv, buf, source, tag)

    def _start(self, call, buf, peer: int, tag: int):
        try:
            return call(buf, peer, tag)
        except MPI.Exception as exc:
            raise translate(exc, [self.worker_ids[peer]]) from None

    # -- collectives (data plane)
    def allreduce(self, sendbuf, recvbuf) -> None:
        self._collective(self.mpi.Iallreduce, sendbuf, recvbuf, MPI.SUM)

    def allgather(self, sendbuf, recvbuf) -> None:
        self._collective(self.mpi.Iallgather, sendbuf, recvbuf)

    def bcast(self, buf, root: int) -> None:
        self._collective(self.mpi.Ibcast, buf, root)

    def _collective(self, call, *args) -> None:
        everyone = range(self.size)
        try:
            request = call(*args)
        except MPI.Exception as exc:
            raise translate(exc, [self.worker_ids[p] for p in everyone]) from None
        self.wait([request], everyone)
