"""The data-plane collectives of :class:`mpibench.sync.comm.Comm`, on every member.

Each starts the nonblocking MPI call (``Iallreduce``, ``Ireduce``, ...) on buffers handed over
by the process's transfer policy and waits for it under the communicator's deadline
(``Comm._collective``); device buffers staged through host memory land once it completes.
The rooted ones (``reduce``, ``scatter``, ``gather``) touch the root's buffer only where MPI
writes it. The fault wrapper sees each as one message to every member.
"""
from __future__ import annotations

from typing import Sequence

from mpi4py import MPI

# The reduction operations ``allreduce`` takes by name (an mpi4py ``MPI.Op`` is passed as it is).
OPS = {name: getattr(MPI, name.upper()) for name in ("sum", "max", "min", "prod") if hasattr(MPI, name.upper())}


def _op(call: str, op):
    """An operation by name (:data:`OPS`) or an mpi4py ``MPI.Op`` as it is."""
    mpi_op = OPS.get(op) if isinstance(op, str) else op
    if mpi_op is None:
        raise ValueError(f"{call}: no operation {op!r} (choose from {', '.join(OPS)})")
    return mpi_op


class Started:
    """A collective started (its request, its name in words, what lands its staged buffers) and not
    yet waited for: handed back by ``iallreduce``, waited for by ``Comm.complete``."""

    __slots__ = ("request", "name", "finish")

    def __init__(self, request, name: str, finish):
        self.request, self.name, self.finish = request, name, finish


class DataCollectives:
    """Mixed into :class:`~mpibench.sync.comm.Comm` (which gives ``mpi``, ``rank``, ``transfer``
    and ``_collective``)."""

    def allreduce(self, sendbuf, recvbuf, op="sum") -> None:
        """``recvbuf`` = ``op`` over every member's ``sendbuf``, element-wise (``op``: a name
        in :data:`OPS` or an mpi4py ``MPI.Op``)."""
        send, sent = self.transfer.outgoing(sendbuf)
        recv, landed = self.transfer.incoming(recvbuf)
        self._collective(self.mpi.Iallreduce, (sent, landed), send, recv, _op("allreduce", op))

    def iallreduce(self, sendbuf, recvbuf, op="sum"):
        """:meth:`allreduce` started and not waited for: the handle to give ``complete([...])``,
        after which ``recvbuf`` holds the result (neither buffer may be touched meanwhile).
        Several may be in flight at once; every member starts them in the same order."""
        send, sent = self.transfer.outgoing(sendbuf)
        recv, landed = self.transfer.incoming(recvbuf)
        return self._begin(self.mpi.Iallreduce, (sent, landed), send, recv, _op("iallreduce", op))

    def reduce(self, sendbuf, recvbuf, root: int, op="sum") -> None:
        """On ``root`` only, ``recvbuf`` = ``op`` over every member's ``sendbuf``; the others
        pass ``recvbuf=None`` (or a buffer left unwritten)."""
        send, sent = self.transfer.outgoing(sendbuf)
        recv, landed = self._incoming_at(root, recvbuf)
        self._collective(self.mpi.Ireduce, (sent, landed), send, recv, _op("reduce", op), root)

    def reduce_scatter(self, sendbuf, recvbuf, counts: Sequence[int], op="sum") -> None:
        """``op`` over every member's ``sendbuf``; rank ``r`` receives elements
        ``sum(counts[:r])`` to ``sum(counts[:r + 1])`` of it into ``recvbuf``."""
        send, sent = self.transfer.outgoing(sendbuf)
        recv, landed = self.transfer.incoming(recvbuf)
        self._collective(self.mpi.Ireduce_scatter, (sent, landed), send, recv, [int(c) for c in counts],
                         _op("reduce_scatter", op))

    def scatter(self, sendbuf, recvbuf, root: int) -> None:
        """Rank ``r`` receives the ``r``-th of ``size`` equal blocks of ``root``'s ``sendbuf``
        (``None`` elsewhere)."""
        send, sent = self.transfer.outgoing(sendbuf) if self.rank == root else (None, None)
        recv, landed = self.transfer.incoming(recvbuf)
        self._collective(self.mpi.Iscatter, (sent, landed), send, recv, root)

    def gather(self, sendbuf, recvbuf, root: int) -> None:
        """``root``'s ``recvbuf`` holds every member's ``sendbuf`` in rank order (``None`` elsewhere)."""
        send, sent = self.transfer.outgoing(sendbuf)
        recv, landed = self._incoming_at(root, recvbuf)
        self._collective(self.mpi.Igather, (sent, landed), send, recv, root)

    def _incoming_at(self, root: int, recvbuf):
        """The receive side of a rooted collective: only the root's buffer is written."""
        if self.rank != root or recvbuf is None:
            return None, None
        return self.transfer.incoming(recvbuf)

    def allgather(self, sendbuf, recvbuf) -> None:
        send, sent = self.transfer.outgoing(sendbuf)
        recv, landed = self.transfer.incoming(recvbuf)
        self._collective(self.mpi.Iallgather, (sent, landed), send, recv)

    def bcast(self, buf, root: int) -> None:
        staged, landed = self.transfer.both(buf)
        self._collective(self.mpi.Ibcast, (landed,), staged, root)
