"""The simulated MPI library's state: processes, communicators, messages, collectives, failures.

One :class:`World` holds everything a simulated job shares. A :class:`CommState` is one
communicator as the library sees it (its processes by rank, the messages not yet received, the
collectives in progress, whether and when it was revoked); each process holds its own handle on
it (:class:`mpibench.sim.mpi.Comm`). Nothing here blocks: requests answer *when* they are (or
will be) finished, and the handles wait on that through the scheduler. The ULFM semantics, as
Open MPI 5 documents them and mpibench relies on them:
* a process that died is noticed by the others ``notice_s`` after its death; an operation that
  needs it (a receive from it, a collective over it) fails with ``ERR_PROC_FAILED`` from then
  on; messages it sent before dying are still delivered;
* ``Revoke`` makes every pending and later operation on the communicator fail with
  ``ERR_REVOKED``, except ``Agree``, ``Shrink``, ``Ack_failed``, ``Get_failed`` and ``Free``;
* ``Agree`` completes over the live processes with the AND of their flags; it fails uniformly
  with ``ERR_PROC_FAILED`` while a failed process was not yet acknowledged (``Ack_failed``) by
  every participant when it called;
* ``Shrink`` gives every live process a communicator of the live processes;
* option ``revoked_sends``: a send posted on a revoked communicator is accepted and never
  delivered (Open MPI 5.0.11, seen on this machine), or refused with ``ERR_REVOKED``;
* option ``lost_notice_in_spawned`` (default on, Open MPI's behaviour, open-mpi/ompi#13325
  related): when the launched job's last processes die together with another (within
  ``notice_s``), processes started by ``Spawn`` are never told of those deaths; a last process
  dying alone is reported.

Collective results are computed once every member needed has arrived; their completion time is
the last arrival plus the network model's cost.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import numpy as np

from .network import Network
from .scheduler import INF, Scheduler

ERR_OTHER, ERR_SPAWN, ERR_PROC_FAILED, ERR_PROC_FAILED_PENDING, ERR_REVOKED = 16, 50, 75, 76, 77
TOLERANT = {"agree", "shrink"}  # collectives that work on a revoked communicator and around the dead


@dataclass(frozen=True)
class Options:
    """Open MPI behaviours the simulation can follow or leave out."""

    lost_notice_in_spawned: bool = True
    spawn_slots: int | None = None  # None: unlimited (mpirun --oversubscribe)
    # A send posted on a revoked communicator: "accepted" (completes, is never received), as Open
    # MPI 5.0.11 behaved in the exhaustive sweep's replays, or "refused" (at once), as ULFM reads.
    revoked_sends: str = "accepted"


@dataclass(eq=False)
class Proc:
    gid: int
    pid: int
    job: int  # 0: the launched job; 1, 2, ...: each Spawn
    death_s: float = INF
    actor: object = None
    parent: object = None  # child side of the spawn inter-communicator
    world: object = None
    exit_code: int | None = None
    files: list = field(default_factory=list)  # opened by it: closed when it ends, as by the OS


@dataclass(eq=False)
class Msg:
    source: int
    tag: int
    data: object
    arrival_s: float


class Req:
    """A pending operation: ``ready_at`` says when it is finished (None: not known yet)."""

    def __init__(self, comm: "CommState", post_s: float):
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


class SendReq(Req):
    """A send completes ``message_s`` after it was posted (the data has left). A revoke
    before then fails it only under ``revoked_sends="refused"``."""

    def ready_at(self, now):
        if self.done_s < self.comm.revoked_s or self.comm.world.options.revoked_sends == "accepted":
            return self.done_s
        self.error = (self.comm.revoked_s, ERR_REVOKED)
        self.done_s = INF
        return self.comm.revoked_s


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
                np.copyto(self.buf.reshape(-1), np.asarray(msg.data).reshape(-1).view(self.buf.dtype))
        return state

    def ready_at(self, now):
        if self.done_s is not None:
            return self.done_s
        if self.cancelled:
            return None
        times = []
        if self.comm.revoked_s < INF:
            times.append((max(self.post_s, self.comm.revoked_s), ERR_REVOKED))
        peers = self.comm.procs if self.source < 0 else [self.comm.procs[self.source]]
        notices = [self.comm.world.notice_s(p, self.observer) for p in peers]
        if notices and min(notices) < INF:
            times.append((max(self.post_s, min(notices)), ERR_PROC_FAILED))
        if not times:
            return None
        self.error = min(times)
        return self.error[0]


class CollReq(Req):
    def __init__(self, comm, post_s, coll, rank):
        super().__init__(comm, post_s)
        self.coll, self.rank = coll, rank

    def ready_at(self, now):
        self.coll.evaluate()
        if self.coll.done_s is not None:
            self.done_s = self.coll.done_s
            return self.done_s
        if self.coll.error is not None:
            self.error = self.coll.error
            return self.error[0]
        return None

    def result(self):
        return self.coll.results.get(self.rank)


@dataclass(eq=False)
class Coll:
    comm: "CommState"
    kind: str
    members: tuple  # ranks that take part
    contribs: dict = field(default_factory=dict)  # rank -> (time, payload, acked gids)
    done_s: float | None = None
    error: tuple | None = None
    results: dict = field(default_factory=dict)

    def evaluate(self) -> None:
        if self.done_s is not None or self.error is not None:
            return
        comm, world = self.comm, self.comm.world
        if self.kind not in TOLERANT and comm.revoked_s < INF:
            self.error = (comm.revoked_s, ERR_REVOKED)
            return
        waiting = [r for r in self.members if r not in self.contribs]
        observer = comm.procs[next(iter(self.contribs))] if self.contribs else None
        notices = {r: world.notice_s(comm.procs[r], observer) for r in waiting}
        if any(t == INF for t in notices.values()):
            return  # a live member has not arrived yet
        last = max([t for t, _, _ in self.contribs.values()] + list(notices.values()), default=0.0)
        if waiting and self.kind not in TOLERANT:
            self.error = (last, ERR_PROC_FAILED)
            return
        nbytes = max([_nbytes(p) for _, p, _ in self.contribs.values()], default=0)
        self.done_s = last + world.net.collective_s(self.kind.split("_")[0], nbytes, len(self.members))
        world.complete(self, waiting)


def _nbytes(payload) -> int:
    if isinstance(payload, tuple) and payload and isinstance(payload[0], np.ndarray):
        return payload[0].nbytes
    if isinstance(payload, np.ndarray):
        return payload.nbytes
    return 64


class CommState:
    def __init__(self, world: "World", procs, inter_low: int = 0):
        world.next_cid += 1
        self.world, self.cid, self.procs = world, world.next_cid, tuple(procs)
        self.inter_low = inter_low  # an inter-communicator: the first inter_low procs are the spawners
        self.revoked_s = INF
        self.unmatched: dict[int, list[Msg]] = {}  # dest rank -> messages not yet received
        self.posted: dict[int, list[RecvReq]] = {}  # dest rank -> receives not yet matched
        self.colls: dict = {}  # key -> Coll
        self.counts: dict = {}  # (rank, family) -> collectives started
        self.acked: dict[int, set] = {}  # rank -> gids acknowledged failed

    def failed(self, rank: int, now: float) -> list[Proc]:
        observer = self.procs[rank]
        return [p for p in self.procs if self.world.notice_s(p, observer) <= now]

    # -- point to point
    def send(self, rank: int, dest: int, tag: int, data, now: float) -> SendReq:
        req = SendReq(self, now)
        nbytes = data.nbytes if isinstance(data, np.ndarray) else len(data)
        src, dst = self.procs[rank], self.procs[dest]
        req.done_s = now + self.world.net.message_s(nbytes, src.gid, dst.gid)
        msg = Msg(rank, tag, data, req.done_s)
        for recv in self.posted.get(dest, []):
            if _matches(recv, rank, tag):
                self.posted[dest].remove(recv)
                self._deliver(recv, msg)
                return req
        self.unmatched.setdefault(dest, []).append(msg)
        return req

    def recv(self, rank: int, source: int, tag: int, buf, now: float) -> RecvReq:
        req = RecvReq(self, now, rank, source, tag, buf, self.procs[rank])
        msg = self.probe(rank, source, tag)
        if msg is not None:
            self.unmatched[rank].remove(msg)
            self._deliver(req, msg)
        else:
            self.posted.setdefault(rank, []).append(req)
        return req

    def probe(self, rank: int, source: int, tag: int, now: float = INF) -> Msg | None:
        for msg in self.unmatched.get(rank, []):
            if (source < 0 or msg.source == source) and (tag < 0 or msg.tag == tag) and msg.arrival_s <= now:
                return msg
        return None

    def _deliver(self, req: RecvReq, msg: Msg) -> None:
        req.done_s = max(req.post_s, msg.arrival_s)
        req.source_rank = msg.source
        req.msg = msg  # lands when the receiver sees it done (RecvReq.outcome)

    # -- collectives
    def collective(self, rank: int, kind: str, payload, now: float, members=None, family="c") -> CollReq:
        key_count = self.counts[(rank, family)] = self.counts.get((rank, family), 0) + 1
        key = (family, key_count - 1)
        coll = self.colls.get(key)
        if coll is None:
            members = tuple(range(len(self.procs))) if members is None else tuple(members)
            coll = self.colls[key] = Coll(self, kind, members)
        if coll.kind != kind:
            raise RuntimeError(f"collective mismatch on a communicator: {coll.kind} against {kind}")
        coll.contribs[rank] = (now, payload, set(self.acked.get(rank, ())))
        return CollReq(self, now, coll, rank)


def _matches(recv: RecvReq, source: int, tag: int) -> bool:
    return (recv.source < 0 or recv.source == source) and (recv.tag < 0 or recv.tag == tag) and not recv.cancelled


class World:
    """Every process and communicator of one simulated job, and its options."""

    def __init__(self, sched: Scheduler, net: Network, options: Options | None = None):
        self.sched, self.net, self.options = sched, net, options or Options()
        self.procs: list[Proc] = []
        self.next_cid = 0
        self.spawner = None  # set by the process model: (parent comm state, count, at) -> child procs
        self.handle = None  # set by the process model: (state, rank) -> a Comm handle
        self.results = {}  # set by the process model: collective kind -> what computes its results
        self.spawned = 0

    def notice_s(self, proc: Proc, observer: Proc | None) -> float:
        """When ``observer`` learns that ``proc`` failed (INF: alive, or never told)."""
        if proc.death_s == INF:
            return INF
        if (self.options.lost_notice_in_spawned and observer is not None and observer.job > 0
                and proc in self._lost_episode()):
            return INF
        return proc.death_s + self.net.notice_s

    def _lost_episode(self) -> list[Proc]:
        """Deaths spawned processes are never told of (repro/ulfm_lost_failure.py): the episode ending the
        launched job if it took several at once (within notice_s); a last one dying alone is told."""
        launched = [p.death_s for p in self.procs if p.job == 0]
        if not launched or INF in launched:
            return []
        end = max(launched)
        episode = [p for p in self.procs if abs(p.death_s - end) <= self.net.notice_s]
        return episode if len(episode) >= 2 else []

    @staticmethod
    def copy(payload):  # what another process receives: never the same object
        return pickle.loads(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))

    def complete(self, coll: Coll, absent) -> None:
        """Compute a finished collective's results, one per contributing rank."""
        self.results[coll.kind](self, coll, absent)
