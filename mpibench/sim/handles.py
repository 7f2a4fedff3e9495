"""A simulated process's communicator handle: the mpi4py ``Comm`` methods mpibench calls.

A handle is (shared communicator state, this process's rank in it). Every
call first checks what a real library would refuse at once (a revoked
communicator, a peer already known dead); non-blocking calls return a
:class:`~mpibench.sim.mpi.Request`; blocking ones wait for it through the
scheduler. Buffers are copied when a message is sent (eager, as MPI may
buffer), objects are pickled as mpi4py pickles them.
"""
from __future__ import annotations

import pickle

import numpy as np

from . import mpi as M
from . import requests  # noqa: F401 - registers MPI.Request and MPI.Prequest
from . import world as w
from .buffers import message
from .handles_cco import BufferCollectives, array_of
from .handles_obj import ObjectCollectives
from .handles_p2p import MorePointToPoint
from .handles_ulfm import NonBlockingULFM


def _now() -> float:
    return M._env.sched.now()


@M.uncharged
class Comm(MorePointToPoint, BufferCollectives, ObjectCollectives, NonBlockingULFM):
    def __init__(self, state: w.CommState, rank: int):
        self.state, self.rank = state, rank
        self.freed = False

    def __repr__(self) -> str:
        return f"<simulated Comm {self.state.cid} rank {self.rank}/{len(self.state.procs)}>"

    # -- identity
    def Get_rank(self) -> int:
        return self.rank if not self.state.inter_low else self._local()[1]

    def Get_size(self) -> int:
        return len(self.state.procs) if not self.state.inter_low else len(self._local()[0])

    def _local(self):
        low = self.state.inter_low
        if self.rank < low:
            return self.state.procs[:low], self.rank
        return self.state.procs[low:], self.rank - low

    def Is_inter(self) -> bool:
        return bool(self.state.inter_low)

    def Is_intra(self) -> bool:
        return not self.state.inter_low

    def Is_revoked(self) -> bool:
        """At once for the process that revoked it; for the others once the revoke reaches them."""
        return self.state.revoked_s <= _now() or self.rank in self.state.revokers

    def Get_group(self) -> M.Group:
        return M.Group(self.state.procs)

    def Set_errhandler(self, handler) -> None:
        pass

    def Get_attr(self, keyval):
        """MPI.UNIVERSE_SIZE: the ranks plus the slots a spawn may fill (None: unlimited, as
        ``mpirun --oversubscribe``); no other attribute is set."""
        if keyval != M.UNIVERSE_SIZE:
            return None
        slots = self.state.world.options.spawn_slots
        return None if slots is None else self.Get_size() + slots

    def Free(self) -> None:
        self.freed = True

    Disconnect = Free

    def Abort(self, code: int = 1) -> None:
        M._env.abort(code)

    @staticmethod
    def Get_parent():
        parent = M._env.proc().parent
        return parent if parent is not None else M.COMM_NULL

    # -- checks every call makes first
    def _usable(self, peers=()) -> None:
        M._env.check_alive()
        now = _now()
        if self.state.revoked_s <= now:
            M._raise(M.ERR_REVOKED)
        me = self.state.procs[self.rank]
        for p in peers:
            if p >= 0 and self.state.world.notice_s(self.state.procs[p], me) <= now:
                M._raise(M.ERR_PROC_FAILED)

    # -- point to point, buffers
    def _revoked_send(self):
        """A send on a revoked communicator under ``revoked_sends="accepted"``: done, never delivered."""
        if self.state.revoked_s <= _now() and self.state.world.options.revoked_sends == "accepted":
            M._env.check_alive()
            return M.Request(w.SendReq(self.state, _now(), _now()))
        return None

    def _blocking_send_to(self, dest: int) -> None:
        """A blocking send to a peer whose death is noticed fails at once, whatever its size."""
        if not (self.state.revoked_s <= _now() and self.state.world.options.revoked_sends == "accepted"):
            self._usable((dest,))

    def _post_send(self, buf, dest: int, tag: int, inline: bool | None = None):
        """The low-level send request (``inline``: see PointToPoint.send); a copy of the data
        goes with it, so the caller's buffer is free at once (eager, as MPI may buffer)."""
        if dest == M.PROC_NULL:  # nothing to send, but a revoked communicator still refuses
            self._usable()
            return w.SendReq(self.state, _now(), _now())
        accepted = self._revoked_send()
        if accepted is not None:
            return accepted.req
        self._usable()  # a dead receiver fails the wait, never the post (Open MPI 5.0.11)
        data = np.array(buf, copy=True) if isinstance(buf, np.ndarray) else message(buf).read()
        return self.state.send(self.rank, dest, tag, data, _now(), inline)

    def _post_recv(self, buf, source: int, tag: int):
        if source == M.PROC_NULL:
            self._usable()
            req = w.SendReq(self.state, _now(), _now())
            req.source_rank, req.tag_seen = M.PROC_NULL, M.ANY_TAG
            return req
        self._usable()
        return self.state.recv(self.rank, source, tag, array_of(buf), _now())

    def Isend(self, buf, dest: int, tag: int = 0) -> M.Request:
        return M.Request(self._post_send(buf, dest, tag))

    def Irecv(self, buf, source: int = M.ANY_SOURCE, tag: int = M.ANY_TAG) -> M.Request:
        return M.Request(self._post_recv(buf, source, tag))

    def Send(self, buf, dest: int, tag: int = 0) -> None:
        if dest != M.PROC_NULL:
            self._blocking_send_to(dest)
        self.Isend(buf, dest, tag).Wait()

    def Recv(self, buf, source: int = M.ANY_SOURCE, tag: int = M.ANY_TAG, status=None) -> None:
        self.Irecv(buf, source, tag).Wait(status)

    # -- point to point, objects
    def isend(self, obj, dest: int, tag: int = 0) -> M.Request:
        accepted = self._revoked_send()
        if accepted is not None:
            return accepted
        self._usable()
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        return M.Request(self.state.send(self.rank, dest, tag, data, _now()))

    def send(self, obj, dest: int, tag: int = 0) -> None:
        self._blocking_send_to(dest)
        self.isend(obj, dest, tag).Wait()

    def recv(self, buf=None, source: int = M.ANY_SOURCE, tag: int = M.ANY_TAG, status=None):
        self._usable()
        req = self.state.recv(self.rank, source, tag, None, _now())
        M._wait(req)
        if status is not None:
            status.source, status.tag = req.source_rank, tag
        return pickle.loads(req.data)

    def Iprobe(self, source: int = M.ANY_SOURCE, tag: int = M.ANY_TAG, status=None) -> bool:
        """A probe fails only for a death the caller knows of (CommState.failed): a given dead
        source, or for any source one not yet acknowledged (Open MPI 5.0.11)."""
        self._usable()
        now = _now()
        known = {p.gid for p in self.state.failed(self.rank, now)}
        if source >= 0 and self.state.procs[source].gid in known:
            M._raise(M.ERR_PROC_FAILED)
        msg = self.state.probe(self.rank, source, tag, now)
        if msg is None:
            if source < 0 and known - self.state.acked.get(self.rank, set()):
                M._raise(M.ERR_PROC_FAILED)
            return False
        if status is not None:
            status.source, status.tag = msg.source, msg.tag
        return True

    # -- collectives
    def _start(self, kind: str, payload, members=None, family="c", tolerant=False):
        if tolerant:
            M._env.check_alive()
        else:
            self._usable()
        return self.state.collective(self.rank, kind, payload, _now(), members, family)

    def _call(self, kind: str, payload, **kw):
        return M._wait(self._start(kind, payload, **kw))

    def Iallreduce(self, sendbuf, recvbuf, op=M.SUM) -> M.Request:
        recvbuf = array_of(recvbuf)
        send = recvbuf if sendbuf is M.IN_PLACE else array_of(sendbuf)
        return M.Request(self._start("allreduce", (np.array(send, copy=True), recvbuf, op)))

    def Allreduce(self, sendbuf, recvbuf, op=M.SUM) -> None:
        self.Iallreduce(sendbuf, recvbuf, op).Wait()

    def Iallgather(self, sendbuf, recvbuf) -> M.Request:
        if sendbuf is M.IN_PLACE or sendbuf is None:  # this rank's block of recvbuf is its contribution
            recv = message(recvbuf, blocks=self.Get_size())
            return M.Request(self._start("allgather", (recv.read(self.rank * recv.count, recv.count), recv.view())))
        return M.Request(self._start("allgather", (np.array(array_of(sendbuf), copy=True), array_of(recvbuf))))

    def Allgather(self, sendbuf, recvbuf) -> None:
        self.Iallgather(sendbuf, recvbuf).Wait()

    def Ibcast(self, buf, root: int = 0) -> M.Request:
        if not isinstance(buf, np.ndarray) and message(buf).datatype.offsets is not None:
            msg = message(buf)  # a derived datatype: its elements travel packed, and land in place
            packed = msg.read()
            return M.Request(requests.Then(self._start("bcast", (packed, root)), lambda _: msg.write(packed)))
        buf = array_of(buf)
        mine = np.array(buf, copy=True) if self.rank == root else buf
        return M.Request(self._start("bcast", (mine, root)))

    def Bcast(self, buf, root: int = 0) -> None:
        self.Ibcast(buf, root).Wait()

    def Ibarrier(self) -> M.Request:
        return M.Request(self._start("barrier", None))

    def Barrier(self) -> None:
        self._call("barrier", None)

    def allgather(self, obj):
        return self._call("allgather_obj", obj)

    def bcast(self, obj, root: int = 0):
        return self._call("bcast_obj", (obj, root))

    def gather(self, obj, root: int = 0):
        return self._call("gather_obj", (obj, root))

    def allreduce(self, obj, op=M.SUM):
        return self._call("allreduce_obj", (obj, op))

    # -- new communicators
    def Dup(self) -> "Comm":
        return self._call("dup", None)

    Clone = Dup

    def Split(self, color: int = 0, key: int = 0):
        result = self._call("split", (None if color == M.UNDEFINED else color, key))
        return M.COMM_NULL if result == "null" else result

    def Split_type(self, split_type: int, key: int = 0):
        net = self.state.world.net
        node = self.state.procs[self.rank].gid // net.ranks_per_node if net.ranks_per_node > 0 else 0
        return self.Split(node, key)

    def Create_group(self, group: M.Group, tag: int = 0):
        members = tuple(self.state.procs.index(p) for p in group.procs)
        return self._call("create_group", None, members=members, family=("group", tag, members))

    def Spawn(self, command, args=None, maxprocs: int = 1, info=None, root: int = 0, errcodes=None):
        return self._call("spawn", maxprocs)

    def Merge(self, high: bool = False) -> "Comm":
        return self._call("merge", bool(high), tolerant=True)

    # -- ULFM
    def Revoke(self) -> None:
        M._env.check_alive()
        self.state.revokers.add(self.rank)
        self.state.revoked_s = min(self.state.revoked_s, _now() + self.state.world.net.alpha_s)

    def Agree(self, flag: int) -> int:
        return self._call("agree", int(flag), family="agree", tolerant=True)

    def Ack_failed(self, num_to_ack=None) -> int:
        failed = self.state.failed(self.rank, _now())
        self.state.acked[self.rank] = {p.gid for p in failed}
        return len(failed)

    def Get_failed(self) -> M.Group:
        return M.Group(self.state.failed(self.rank, _now()))

    def Shrink(self) -> "Comm":
        return self._call("shrink", None, family="shrink", tolerant=True)


M.Comm = M.Intracomm = M.Intercomm = Comm  # what mpi4py code names MPI.Comm
