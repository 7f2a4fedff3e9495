"""The simulated library's point-to-point messages: sends, receives, matching, and how they fail.

What Open MPI 5.0.11 with ULFM did on this machine (``docs/simulated-twin.md`` has the
programs), and this module follows:

* messages from one sender to one receiver on one communicator are matched in the order they
  were sent (non-overtaking), a probe included: a later message never matches while an earlier
  one that also matches has not arrived;
* a send of up to ``Options.inline_send_bytes`` (256) completes as soon as its data has left,
  even when the receiver is dead; a larger one completes only once the receiver has matched it,
  and fails with ``ERR_PROC_FAILED`` once the receiver's death is noticed before then (posting
  it never fails: the error comes from the wait);
* a receive from a dead peer fails with ``ERR_PROC_FAILED`` once the death is noticed; an
  any-source receive with a noticed failure fails with ``ERR_PROC_FAILED_PENDING``;
* a revoke fails a pending receive, and a large send not yet matched, with ``ERR_REVOKED``;
  a send posted on a revoked communicator is governed by ``Options.revoked_sends``.

Nothing here blocks: a request answers *when* it is (or will be) finished, and the
handles wait on that through the scheduler.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .scheduler import INF

ERR_TRUNCATE, ERR_OTHER, ERR_IN_STATUS, ERR_SPAWN = 15, 16, 18, 50
ERR_PROC_FAILED, ERR_PROC_FAILED_PENDING, ERR_REVOKED = 75, 76, 77


@dataclass(eq=False)
class Msg:
    source: int
    tag: int
    data: object
    arrival_s: float
    send: "SendReq | None" = None  # the sender's request: told when a receive matches it


class Req:
    """A pending operation: ``ready_at`` says when it is finished (None: not known yet)."""

    def __init__(self, comm, post_s: float):
        self.comm, self.post_s = comm, post_s
        self.done_s: float | None = None
        self.error: tuple[float, int] | None = None
        self.cancelled = False

    def outcome(self, now: float):
        """("done"|"error"|"pending", error class)."""
        at = self.ready_at(now)
        if at is None or at > now:
            return "pending", 0
        if self.done_s is not None and self.done_s <= now:
            return "done", 0
        return "error", self.error[1]

    def ready_at(self, now: float) -> float | None:
        raise NotImplementedError

    def fails_at(self) -> float | None:
        """When its outcome turns "error" (None: it finishes, or nothing is known yet). An error
        recorded earlier no longer counts once a message or result is due: ``outcome`` says done."""
        at = self.ready_at(INF)
        return at if at is not None and (self.done_s is None or self.done_s > at) else None


class SendReq(Req):
    """A send: its data has left at ``left_s``; a large one also waits for the match."""

    def __init__(self, comm, post_s: float, left_s: float, dest=None, observer=None, inline: bool = True):
        super().__init__(comm, post_s)
        self.left_s, self.dest, self.observer, self.inline = left_s, dest, observer, inline
        self.matched_s: float | None = None
        self.done_s = left_s if inline else None

    def ready_at(self, now):
        done = self.done_s if self.inline else (
            None if self.matched_s is None else max(self.left_s, self.matched_s))
        revoked = self.comm.revoked_s
        refusing = self.comm.world.options.revoked_sends == "refused" or not self.inline
        if revoked < INF and refusing and (done is None or revoked < done):
            self.error, self.done_s = (max(self.post_s, revoked), ERR_REVOKED), None
            return self.error[0]
        if done is not None:
            self.done_s = done
            return done
        notice = self.comm.world.notice_s(self.dest, self.observer) if self.dest is not None else INF
        if notice < INF:
            self.error = (max(self.post_s, notice), ERR_PROC_FAILED)
            return self.error[0]
        return None


class RecvReq(Req):
    def __init__(self, comm, post_s, rank, source, tag, buf, observer):
        super().__init__(comm, post_s)
        self.rank, self.source, self.tag, self.buf, self.observer = rank, source, tag, buf, observer
        self.data = None
        self.msg: Msg | None = None  # matched, not yet landed in ``buf``

    def outcome(self, now: float):
        """A matched message lands when the receiver sees it done (the library writes it as the
        receiver progresses: a send posted meanwhile from an overlapping buffer sends the old)."""
        state = super().outcome(now)
        if state[0] == "done" and self.msg is not None:
            msg, self.msg = self.msg, None
            if self.buf is None:
                self.data = msg.data
            else:
                _land(self.buf, np.asarray(msg.data).reshape(-1))
        return state

    def ready_at(self, now):
        if self.done_s is not None:
            return self.done_s
        if self.error is not None and self.error[1] == ERR_TRUNCATE:
            return self.error[0]
        if self.cancelled:
            return None
        times = []
        if self.comm.revoked_s < INF:
            times.append((max(self.post_s, self.comm.revoked_s), ERR_REVOKED))
        peers = self.comm.procs if self.source < 0 else [self.comm.procs[self.source]]
        notices = [self.comm.world.notice_s(p, self.observer) for p in peers]
        if notices and min(notices) < INF:
            failed = ERR_PROC_FAILED_PENDING if self.source < 0 else ERR_PROC_FAILED
            times.append((max(self.post_s, min(notices)), failed))
        if not times:
            return None
        self.error = min(times)
        return self.error[0]


def _land(buf: np.ndarray, data: np.ndarray) -> None:
    """A message into its receive buffer: the whole buffer, or its first bytes when the message
    is shorter (MPI fills only what was sent; a longer one failed at the match)."""
    if data.nbytes == buf.nbytes:
        np.copyto(buf.reshape(-1), data.view(buf.dtype))
    else:
        buf.reshape(-1).view(np.uint8)[:data.nbytes] = data.view(np.uint8)


def _matches(recv: RecvReq, source: int, tag: int) -> bool:
    return (recv.source < 0 or recv.source == source) and (recv.tag < 0 or recv.tag == tag) and not recv.cancelled


class PointToPoint:
    """A communicator's messages not yet received and receives not yet matched (a mixin of
    :class:`mpibench.sim.world.CommState`)."""

    def send(self, rank: int, dest: int, tag: int, data, now: float, inline: bool | None = None) -> SendReq:
        """``inline``: None by the message's size; True for a buffered send, False for a synchronous one."""
        nbytes = data.nbytes if isinstance(data, np.ndarray) else len(data)
        src, dst = self.procs[rank], self.procs[dest]
        left_s = now + self.world.net.message_s(nbytes, src.gid, dst.gid)
        inline = nbytes <= self.world.options.inline_send_bytes if inline is None else inline
        req = SendReq(self, now, left_s, dst, src, inline)
        msg = Msg(rank, tag, data, left_s, req)
        for recv in self.posted.get(dest, []):
            if _matches(recv, rank, tag):
                self.posted[dest].remove(recv)
                self._deliver(recv, msg, now)
                return req
        self.unmatched.setdefault(dest, []).append(msg)
        return req

    def recv(self, rank: int, source: int, tag: int, buf, now: float) -> RecvReq:
        req = RecvReq(self, now, rank, source, tag, buf, self.procs[rank])
        msg = self.probe(rank, source, tag)
        if msg is not None:
            self.unmatched[rank].remove(msg)
            self._deliver(req, msg, now)
        else:
            self.posted.setdefault(rank, []).append(req)
        return req

    def probe(self, rank: int, source: int, tag: int, now: float = INF) -> Msg | None:
        """The first message ``rank`` may match now; a sender's later message waits for its
        earlier matching one (non-overtaking), also when the later one arrived first."""
        passed = set()
        for msg in self.unmatched.get(rank, []):
            if (source < 0 or msg.source == source) and (tag < 0 or msg.tag == tag) and msg.source not in passed:
                if msg.arrival_s <= now:
                    return msg
                passed.add(msg.source)
        return None

    def _deliver(self, req: RecvReq, msg: Msg, now: float) -> None:
        req.done_s = max(req.post_s, msg.arrival_s)
        req.source_rank, req.tag_seen = msg.source, msg.tag
        if req.buf is not None and np.asarray(msg.data).nbytes > req.buf.nbytes:
            req.error, req.done_s = (req.done_s, ERR_TRUNCATE), None  # MPI_ERR_TRUNCATE at the wait
        req.msg = msg  # lands when the receiver sees it done (RecvReq.outcome)
        if msg.send is not None:
            msg.send.matched_s = now
