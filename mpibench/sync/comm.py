"""The communicator the sync strategies talk through: buffer calls with deadlines.

Every wait polls its requests against a deadline, so a peer that never answers
becomes a :class:`PeerLate` error instead of a hang, and MPI errors from a dead
peer (ULFM's ``ERR_PROC_FAILED``/``ERR_REVOKED``) become :class:`PeerFailed`.
Strategies learn about faults only through these exceptions. The fault
injection wrapper in ``mpibench.faults`` wraps this class and keeps its
interface.

Device buffers (CuPy arrays) go through the process's transfer policy
(:mod:`mpibench.kernels.transfer`): handed to MPI directly when the library is
CUDA-aware, otherwise staged through pinned host buffers that are copied back
to the device once the request has completed (in :meth:`Comm.wait`). Host
buffers pass through untouched.

Ranks have two names: the position in the current communicator (``rank``) and
the stable worker id (``worker_ids[rank]``), which survives shrinking and is
what records and invariants talk about. ``size`` (also ``Get_size()``) is the
number of members now: the world a strategy reduces over, smaller after a
shrink. Every call a strategy may use is listed, with its arguments, in
``docs/strategy-api.md``.
"""
from __future__ import annotations

import os
import time
from typing import Sequence

import numpy as np
from mpi4py import MPI

from .collectives import OPS, DataCollectives, Started

_HOST = np.ndarray  # a plain host array: handed to MPI as it is

# How a wait polls. A nonblocking collective moves only while its ranks test it, so the rank
# that arrived first must keep testing: each pause it takes is added to the last rank's
# reduction. Measured at p = 2 (77 KB Iallreduce, the last rank 0.1-0.5 ms late), pausing
# with time.sleep(0) after 64 tests, and 200 us sleeps after 1,000, made the last rank's
# call 33-136 us against 17-26 us when testing without pause; yielding the core
# (sched_yield: back at once when nothing else wants it) kept 25 us. Only a wait that has
# lasted YIELD_WINDOW_S sleeps between tests (a late or dead peer must not cost a core).
SPINS_BEFORE_CLOCK = 64
YIELD_WINDOW_S = 0.01
LONG_WAIT_PAUSE_S = 0.0002
_yield = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))



COLLECTIVE = "the collective"  # how a collective's wait is named (and told apart: never cancelled)
STARTED_KEPT = 256
COLLECTIVE_NAMES = {"Iallreduce": "all-reduce", "Iallgather": "all-gather", "Ibcast": "broadcast",
                    "Ibarrier": "barrier", "Ireduce": "reduce", "Ireduce_scatter": "reduce-scatter",
                    "Iscatter": "scatter", "Igather": "gather"}


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


ERR_IN_STATUS, ERR_TRUNCATE, ERR_PENDING = MPI.ERR_IN_STATUS, MPI.ERR_TRUNCATE, getattr(MPI, "ERR_PENDING", -1)

FAILURE_CLASSES = {
    getattr(MPI, name) for name in ("ERR_PROC_FAILED", "ERR_PROC_FAILED_PENDING", "ERR_REVOKED")
    if hasattr(MPI, name)
}


def translate(exc: MPI.Exception, peers: Sequence[int]) -> CommError:
    if exc.Get_error_class() in FAILURE_CLASSES:
        return PeerFailed(f"peer failure ({exc.Get_error_string()})", peers)
    return CommError(f"MPI error: {exc.Get_error_string()}", peers)


class Comm(DataCollectives):
    """Deadline-bounded buffer operations over an MPI communicator."""

    def __init__(self, mpi_comm: MPI.Comm, worker_ids: Sequence[int] | None = None,
                 deadline_s: float = 60.0, transfer=None):
        from mpibench.kernels.transfer import process_transfer

        self.mpi = mpi_comm
        self.transfer = transfer if transfer is not None else process_transfer()
        # (request, done) for staged device buffers: run once the request has completed.
        self._after: list = []
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()
        self.worker_ids = tuple(worker_ids) if worker_ids is not None else tuple(range(self.size))
        self.deadline_s = deadline_s
        # id(request) -> (what it is, its receive buffer or None): the words of a late or failed wait
        self._started: dict[int, tuple] = {}
        self._statuses: list = []  # reused by every wait: where MPI says each request's own error

    @property
    def worker_id(self) -> int:
        return self.worker_ids[self.rank]

    def Get_rank(self) -> int:
        """``rank``, under mpi4py's name (for code adapted from mpi4py)."""
        return self.rank

    def Get_size(self) -> int:
        """``size``, under mpi4py's name: the members now."""
        return self.size

    # -- hooks for wrappers: the plain communicator ignores them
    def mark(self, step: int, phase: str) -> None:
        """Tell the communicator where the worker loop stands."""

    # -- waiting
    def wait(self, requests: list, peers: Sequence[int] | None = None, what: str | None = None,
             receives: dict | None = None) -> None:
        """Wait for all ``requests`` or raise once the deadline passes.

        ``peers`` (ranks) are the ones named in the error if it fails; by default every
        member; ``what`` says in words what was waited for (by default the requests and the
        peers). The deadline is set at the first unsuccessful test and checked from the
        65th on: a short message completes before the clock is ever read twice.
        Between tests the rank yields its core, and sleeps only once the wait has
        lasted ``YIELD_WINDOW_S`` (see the module's constants). On the deadline the
        point-to-point requests are cancelled; a collective's are left (MPI cannot cancel
        them: Open MPI answers MPI_ERR_REQUEST). An error MPI carries in a request's status
        (``MPI_ERR_IN_STATUS``) is unpacked into that request's own error, and a truncated
        receive says both lengths (``receives``: request index -> its buffer, when the request
        was not started here)."""
        if peers is None:
            peers = range(self.size)
        deadline = None
        spins = 0
        statuses = self._statuses
        if len(statuses) < len(requests):
            statuses.extend(MPI.Status() for _ in range(len(requests) - len(statuses)))
        try:
            while not MPI.Request.Testall(requests, statuses):
                if deadline is None:
                    started = time.monotonic()
                    deadline = started + self.deadline_s
                spins += 1
                if spins > SPINS_BEFORE_CLOCK:
                    now = time.monotonic()
                    if now > deadline:
                        self._cancel(requests, collective=what is not None and what.startswith(COLLECTIVE))
                        raise PeerLate(f"no answer within {self.deadline_s:g} s: rank {self.rank} waited for "
                                       f"{what or self._described(requests, peers)}",
                                       [self.worker_ids[p] for p in peers])
                    if now - started < YIELD_WINDOW_S:
                        _yield()
                    else:
                        time.sleep(LONG_WAIT_PAUSE_S)
        except MPI.Exception as exc:
            who = [self.worker_ids[p] for p in peers]
            if exc.Get_error_class() == ERR_IN_STATUS:
                raise self._in_status(requests, statuses, receives or {}, who) from None
            raise translate(exc, who) from None
        if self._after:
            self._finish_staged(requests)

    def _in_status(self, requests: list, statuses: list, receives: dict, who) -> CommError:
        """The first error a request's status carries, in words."""
        for i, request in enumerate(requests):
            code = statuses[i].Get_error()
            if code in (MPI.SUCCESS, ERR_PENDING):
                continue
            buf = receives.get(i, self._started.get(id(request), (None, None))[1])
            if MPI.Get_error_class(code) == ERR_TRUNCATE and buf is not None:
                itemsize = getattr(buf, "itemsize", 1) or 1
                sent = statuses[i].Get_count(MPI.BYTE) // itemsize
                return CommError(f"rank {self.rank} received {getattr(buf, 'size', len(buf))} elements where its "
                                 f"send had {sent} ({MPI.Get_error_string(code)})", who)
            if MPI.Get_error_class(code) in FAILURE_CLASSES:
                return PeerFailed(f"peer failure ({MPI.Get_error_string(code)})", who)
            return CommError(f"MPI error: {MPI.Get_error_string(code)}", who)
        return CommError("MPI error: MPI_ERR_IN_STATUS, and no request's status names its error", who)

    @staticmethod
    def _cancel(requests: list, collective: bool) -> None:
        for request in [] if collective else requests:
            if request != MPI.REQUEST_NULL:
                try:
                    request.Cancel()
                except MPI.Exception:
                    pass  # an MPI that cannot cancel it leaves it pending; the wait is over either way

    def _described(self, requests: list, peers) -> str:
        known = [self._started.get(id(r), (None,))[0] for r in requests]
        if known and all(known):
            return " and ".join(dict.fromkeys(known))
        peers = list(peers)
        who = ("every rank" if len(peers) == self.size and self.size > 1 else
               f"rank {peers[0]}" if len(peers) == 1 else "ranks " + ", ".join(map(str, peers)))
        return f"{len(requests)} request(s) with {who}"

    def _finish_staged(self, requests: list) -> None:
        """Land the staged device buffers of the completed ``requests``.

        After a failed wait nothing lands and the pinned buffers are not
        reused: MPI may still write into a cancelled receive's buffer.
        """
        pending = []
        for request, done in self._after:
            if any(request is r for r in requests):
                done()
            else:
                pending.append((request, done))
        self._after = pending

    # -- point to point (data plane)
    # The blocking calls start their requests through _start, never through the public
    # isend/irecv, so a wrapper that overrides those counts each message once.
    def sendrecv(self, sendbuf, dest: int, recvbuf, source: int, tag: int = 0) -> None:
        if self.transfer.device is None and type(sendbuf) is _HOST and type(recvbuf) is _HOST:
            # Host arrays and no device back-end: nothing to stage, so the MPI calls directly
            # (the hot path of every round; a wrapper still sees this call).
            try:
                requests = [self.mpi.Irecv(recvbuf, source, tag), self.mpi.Isend(sendbuf, dest, tag)]
            except MPI.Exception as exc:
                raise translate(exc, [self.worker_ids[p] for p in (dest, source)]) from None
            self.wait(requests, (dest, source), f"a send to rank {dest} and a receive from rank {source}",
                      {0: recvbuf})
            return
        requests = [self._start(self.mpi.Irecv, self.transfer.incoming(recvbuf), source, tag),
                    self._start(self.mpi.Isend, self.transfer.outgoing(sendbuf), dest, tag)]
        self.wait(requests, (dest, source), f"a send to rank {dest} and a receive from rank {source}")

    def send(self, buf, dest: int, tag: int = 0) -> None:
        self.wait([self._start(self.mpi.Isend, self.transfer.outgoing(buf), dest, tag)], (dest,),
                  f"a send to rank {dest}")

    def recv(self, buf, source: int, tag: int = 0) -> None:
        self.wait([self._start(self.mpi.Irecv, self.transfer.incoming(buf), source, tag)], (source,),
                  f"a receive from rank {source}")

    def isend(self, buf, dest: int, tag: int = 0):
        if self.transfer.device is None and type(buf) is _HOST:
            return self._start(self.mpi.Isend, (buf, None), dest, tag)
        return self._start(self.mpi.Isend, self.transfer.outgoing(buf), dest, tag)

    def irecv(self, buf, source: int, tag: int = 0):
        if self.transfer.device is None and type(buf) is _HOST:
            return self._start(self.mpi.Irecv, (buf, None), source, tag)
        return self._start(self.mpi.Irecv, self.transfer.incoming(buf), source, tag)

    def _start(self, call, staged, peer: int, tag: int):
        buf, done = staged
        try:
            request = call(buf, peer, tag)
        except MPI.Exception as exc:
            raise translate(exc, [self.worker_ids[peer]]) from None
        if done is not None:
            self._after.append((request, done))
        # what each recent request is, so a late wait can say it in words (bounded: a few rounds' worth)
        receive = "recv" in call.__name__.lower()
        self._started[id(request)] = ((f"a receive from rank {peer}", buf) if receive
                                      else (f"a send to rank {peer}", None))
        if len(self._started) > STARTED_KEPT:
            del self._started[next(iter(self._started))]
        return request

    def barrier(self) -> None:
        """Return once every member has entered it (under the deadline, like every wait)."""
        self._collective(self.mpi.Ibarrier, ())

    def _collective(self, call, finish, *args) -> None:
        self.complete([self._begin(call, finish, *args)])

    def _begin(self, call, finish, *args) -> Started:
        try:
            request = call(*args)
        except MPI.Exception as exc:
            raise translate(exc, list(self.worker_ids)) from None
        return Started(request, COLLECTIVE_NAMES.get(call.__name__, call.__name__), finish)

    def complete(self, started: list) -> None:
        """Wait, under the deadline like every wait, for collectives started and not yet waited
        for (:meth:`iallreduce`); each one's receive buffer then holds its result."""
        names = " and ".join(dict.fromkeys(s.name for s in started))
        self.wait([s.request for s in started], range(self.size), f"{COLLECTIVE} {names} with every rank")
        for s in started:
            for done in s.finish:  # staged device buffers: release and land after completion
                if done is not None:
                    done()
