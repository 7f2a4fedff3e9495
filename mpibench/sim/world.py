"""The simulated MPI library's state: processes, communicators, messages, collectives, failures.

One :class:`World` holds everything a simulated job shares. A :class:`CommState` is one
communicator as the library sees it (its processes by rank, the messages not yet received, the
collectives in progress, whether and when it was revoked); each process holds its own handle on
it (:class:`mpibench.sim.mpi.Comm`). Nothing here blocks: requests answer *when* they are (or
will be) finished, and the handles wait on that through the scheduler. The ULFM semantics, as
Open MPI 5 documents them and mpibench relies on them:
* a process that died is noticed by the others ``notice_s`` after its death; an operation that
  needs it (a receive from it, a large send to it, a collective over it) fails with
  ``ERR_PROC_FAILED`` from then on; messages it sent before dying are still delivered
  (point-to-point messages: :mod:`.p2p`);
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
from .p2p import (ERR_IN_STATUS, ERR_OTHER, ERR_TRUNCATE, ERR_PROC_FAILED, ERR_PROC_FAILED_PENDING, ERR_REVOKED,  # noqa: F401
                  ERR_SPAWN, PointToPoint, RecvReq, Req, SendReq)
from .scheduler import INF, Scheduler
TOLERANT = {"agree", "shrink"}  # collectives that work on a revoked communicator and around the dead


@dataclass(frozen=True)
class Options:
    """Open MPI behaviours the simulation can follow or leave out."""

    lost_notice_in_spawned: bool = True
    spawn_slots: int | None = None  # None: unlimited (mpirun --oversubscribe)
    # A send posted on a revoked communicator: "accepted" (completes, is never received), as Open
    # MPI 5.0.11 behaved in the exhaustive sweep's replays, or "refused" (at once), as ULFM reads.
    revoked_sends: str = "accepted"
    # A send of up to this many bytes completes once its data has left, even to a dead peer; a
    # larger one waits for the receiver's match (Open MPI 5.0.11's shared-memory transport here).
    inline_send_bytes: int = 256


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
    threads: list = field(default_factory=list)  # actors of the threads it started (mpibench.sim.threads)


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


class CommState(PointToPoint):
    def __init__(self, world: "World", procs, inter_low: int = 0):
        world.next_cid += 1
        self.world, self.cid, self.procs = world, world.next_cid, tuple(procs)
        self.inter_low = inter_low  # an inter-communicator: the first inter_low procs are the spawners
        self.revoked_s = INF
        self.revokers: set[int] = set()  # ranks that called Revoke (they know at once)
        self.unmatched: dict[int, list[Msg]] = {}  # dest rank -> messages not yet received
        self.posted: dict[int, list[RecvReq]] = {}  # dest rank -> receives not yet matched
        self.colls: dict = {}  # key -> Coll
        self.counts: dict = {}  # (rank, family) -> collectives started
        self.acked: dict[int, set] = {}  # rank -> gids acknowledged failed

    def failed(self, rank: int, now: float) -> list[Proc]:
        """The failed processes ``rank`` knows of: noticed, and learned through an operation
        of its own that failed (Open MPI tells ``Get_failed``, ``Ack_failed`` and probes of a
        death only once a send, receive or collective of the process has failed on it)."""
        observer = self.procs[rank]
        known = self.world.known.get(observer.gid, ())
        return [p for p in self.procs if p.gid in known and self.world.notice_s(p, observer) <= now]

    def learn(self, rank: int, now: float) -> None:
        """An operation of ``rank`` failed for a death: every death it has noticed is known."""
        observer = self.procs[rank]
        known = self.world.known.setdefault(observer.gid, set())
        known.update(p.gid for p in self.procs if self.world.notice_s(p, observer) <= now)

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
        self.known: dict[int, set] = {}  # observer gid -> gids whose failure it has learned (CommState.learn)

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
