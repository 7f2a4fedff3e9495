"""The rest of a communicator handle's point-to-point calls: send modes, send-receive, persistent
requests and the blocking probe (a mixin of :class:`mpibench.sim.handles.Comm`).

Every send copies its data when posted, so the send modes differ only in when they complete:
a synchronous send (``Ssend``) once the receiver has matched it, a buffered one (``Bsend``) at
once whatever its size, standard and ready sends by the message's size (``PointToPoint.send``).
A ready send is a standard one (its receive is posted, as MPI requires of the caller).
"""
from __future__ import annotations

import numpy as np

from . import mpi as M
from .buffers import message
from .handles_cco import array_of
from .requests import Both


@M.uncharged
class MorePointToPoint:
    # -- send modes
    def _send_mode(self, buf, dest: int, tag: int, inline: bool | None) -> None:
        if dest != M.PROC_NULL:
            self._blocking_send_to(dest)
        M.Request(self._post_send(buf, dest, tag, inline)).Wait()

    def Ssend(self, buf, dest: int, tag: int = 0) -> None:
        self._send_mode(buf, dest, tag, False)

    def Issend(self, buf, dest: int, tag: int = 0):
        return M.Request(self._post_send(buf, dest, tag, False))

    def Bsend(self, buf, dest: int, tag: int = 0) -> None:
        self._send_mode(buf, dest, tag, True)

    def Ibsend(self, buf, dest: int, tag: int = 0):
        return M.Request(self._post_send(buf, dest, tag, True))

    def Rsend(self, buf, dest: int, tag: int = 0) -> None:
        self._send_mode(buf, dest, tag, None)

    def Irsend(self, buf, dest: int, tag: int = 0):
        return M.Request(self._post_send(buf, dest, tag))

    # -- send and receive in one call
    def Isendrecv(self, sendbuf, dest: int, sendtag: int = 0, recvbuf=None, source: int = M.ANY_SOURCE,
                  recvtag: int = M.ANY_TAG):
        recvbuf = array_of(recvbuf)  # both specifications are checked before anything is posted
        send = self._post_send(sendbuf if sendbuf is None or isinstance(sendbuf, np.ndarray) else message(sendbuf),
                               dest, sendtag)
        return M.Request(Both(send, self._post_recv(recvbuf, source, recvtag)))

    def Sendrecv(self, sendbuf, dest: int, sendtag: int = 0, recvbuf=None, source: int = M.ANY_SOURCE,
                 recvtag: int = M.ANY_TAG, status=None) -> None:
        self.Isendrecv(sendbuf, dest, sendtag, recvbuf, source, recvtag).Wait(status)

    def Isendrecv_replace(self, buf, dest: int, sendtag: int = 0, source: int = M.ANY_SOURCE,
                          recvtag: int = M.ANY_TAG):
        view = array_of(buf)
        send = self._post_send(view, dest, sendtag)  # the data left with a copy: the buffer may be received into
        return M.Request(Both(send, self._post_recv(view, source, recvtag)))

    def Sendrecv_replace(self, buf, dest: int, sendtag: int = 0, source: int = M.ANY_SOURCE,
                         recvtag: int = M.ANY_TAG, status=None) -> None:
        self.Isendrecv_replace(buf, dest, sendtag, source, recvtag).Wait(status)

    # -- persistent requests: each Start posts the operation again, reading the buffer then
    def Send_init(self, buf, dest: int, tag: int = 0):
        return M.Prequest(lambda: self._post_send(buf, dest, tag))

    def Ssend_init(self, buf, dest: int, tag: int = 0):
        return M.Prequest(lambda: self._post_send(buf, dest, tag, False))

    def Bsend_init(self, buf, dest: int, tag: int = 0):
        return M.Prequest(lambda: self._post_send(buf, dest, tag, True))

    Rsend_init = Send_init

    def Recv_init(self, buf, source: int = M.ANY_SOURCE, tag: int = M.ANY_TAG):
        return M.Prequest(lambda: self._post_recv(buf, source, tag))

    # -- blocking probe
    def Probe(self, source: int = M.ANY_SOURCE, tag: int = M.ANY_TAG, status=None) -> bool:
        """Wait until a matching message has arrived (fails once a given dead source is noticed)."""
        if source == M.PROC_NULL:
            if status is not None:
                status.source, status.tag = M.PROC_NULL, M.ANY_TAG
            return True
        self._usable()
        me = self.state.procs[self.rank]

        def arrived():
            msg = self.state.probe(self.rank, source, tag)
            if msg is not None:
                return msg.arrival_s
            notice = self.state.world.notice_s(self.state.procs[source], me) if source >= 0 else M.w.INF
            return notice if notice < M.w.INF else None

        M._env.sched.block(arrived)
        if self.state.probe(self.rank, source, tag, M._env.sched.now()) is None:
            self.state.learn(self.rank, M._env.sched.now())
            M._raise(M.ERR_PROC_FAILED)
        return self.Iprobe(source, tag, status)
