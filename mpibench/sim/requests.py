"""The simulated library's requests: ``MPI.Request``, persistent ``MPI.Prequest``, and their waits.

As in mpi4py, a request is a handle: once a wait or test sees it finish it becomes
``REQUEST_NULL`` (false, equal to ``MPI.REQUEST_NULL``); a persistent request only goes
inactive until started again, and becomes null when freed. ``Testall`` raises
``ERR_IN_STATUS`` once one request failed and ``Waitall`` does too, as Open MPI 5.0.11 did here
(the failed request's own class goes into its status).
"""
from __future__ import annotations

from . import mpi as M
from . import world as w
from .collectives import Error

_HANDLES: dict = {}  # handle -> the low-level request it names (filled when a handle is asked for)


def _fill(status, req) -> None:
    if status is not None and req is not None:
        status.source = getattr(req, "source_rank", status.source)
        status.tag = getattr(req, "tag_seen", status.tag)


class Both(w.Req):
    """Two operations waited for as one (``Isendrecv``): done when both are, failed when one is."""

    def __init__(self, first, second):
        super().__init__(first.comm, first.post_s)
        self.parts = (first, second)
        self.source_rank, self.tag_seen = getattr(second, "source_rank", None), None

    def ready_at(self, now):
        times = [r.ready_at(now) for r in self.parts]
        errors = [t for r, t in zip(self.parts, times) if t is not None and r.error is not None and r.done_s is None]
        if errors:
            return min(errors)
        return None if None in times else max(times)

    def fails_at(self):
        times = [t for t in (r.fails_at() for r in self.parts) if t is not None]
        return min(times, default=None)

    def outcome(self, now):
        states = [r.outcome(now) for r in self.parts]
        for state in states:
            if state[0] == "error":
                return state
        self.source_rank = getattr(self.parts[1], "source_rank", None)
        self.tag_seen = getattr(self.parts[1], "tag_seen", None)
        return ("done", 0) if all(s[0] == "done" for s in states) else ("pending", 0)


class Then(w.Req):
    """A collective whose caller's share of the result is written when the caller sees it done
    (``finish`` gets what the collective gave the caller), as a library writes a non-blocking
    collective's receive buffer by the time its wait returns."""

    def __init__(self, inner, finish):
        super().__init__(inner.comm, inner.post_s)
        self.inner, self.finish = inner, finish

    def ready_at(self, now):
        at = self.inner.ready_at(now)
        self.done_s, self.error = self.inner.done_s, self.inner.error
        return at

    def outcome(self, now):
        state = self.inner.outcome(now)
        if state[0] == "done":
            result = self.inner.result()
            if isinstance(result, Error):  # a collective that fails uniformly (agree)
                return "error", result.error_class
            if self.finish is not None:
                finish, self.finish = self.finish, None
                finish(result)
        return state


@M.uncharged
class Request:
    def __init__(self, req=None):
        if isinstance(req, Request):
            self.req, self.key, self.null = req.req, req.key, req.null
        else:
            self.req, self.key, self.null = req, req, req is None

    @property
    def active(self) -> bool:
        return not self.null

    def __bool__(self) -> bool:
        return not self.null

    def __eq__(self, other):
        if not isinstance(other, Request):
            return NotImplemented
        return (self.null and other.null) or (not self.null and not other.null and self.key is other.key)

    def __hash__(self):
        return 0 if self.null else id(self.key)

    @property
    def handle(self) -> int:
        if self.null:
            return 0
        _HANDLES[id(self.key)] = self
        return id(self.key)

    @classmethod
    def fromhandle(cls, handle: int) -> "Request":
        found = _HANDLES.get(handle)
        new = cls.__new__(cls)
        new.__init__(found)
        return new

    def toint(self) -> int:
        return -1  # no integer (ABI) handle in the simulated library

    def py2f(self) -> int:
        return -1  # no Fortran handle either

    def _finished(self) -> None:
        self.null = True

    def Test(self, status=None) -> bool:
        if not self.active:
            return True
        state, error_class = self.req.outcome(M._env.sched.now())
        if state == "error":
            M._learn(self.req, error_class)
            if status is not None:
                status.error = error_class
            M._raise(error_class)
        if state == "done":
            _fill(status, self.req)
            self._finished()
        return state == "done"

    def Wait(self, status=None) -> bool:
        if self.active:
            M._wait(self.req)
            _fill(status, self.req)
            self._finished()
        return True

    def Get_status(self, status=None) -> bool:
        """Whether it finished, without freeing it."""
        if not self.active:
            return True
        state, _ = self.req.outcome(M._env.sched.now())
        if state == "done":
            _fill(status, self.req)
        return state == "done"

    def Cancel(self) -> None:
        if self.req is not None:
            self.req.cancelled = True

    def Free(self) -> None:
        self.null = True

    @staticmethod
    def Testall(requests, statuses=None) -> bool:
        live = [r.req for r in requests if isinstance(r, Request) and r.active]
        if M._all_done(live, statuses):
            _finish(requests)
            return True
        actor = M._env.sched.me()
        key = id(requests)
        polls = actor.polls + 1 if getattr(actor, "poll_key", None) == key else 0
        actor.poll_key, actor.polls = key, polls
        quantum = min(2e-3, 20e-6 * 2 ** min(polls, 10))  # a test that keeps failing waits longer

        def ready():
            errors = [t for t in (r.fails_at() for r in live) if t is not None]
            if errors:
                return min(errors)
            times = [r.ready_at(w.INF) for r in live]
            return None if None in times else max(times)

        now = M._env.sched.now()
        due = ready()
        if due is not None and due <= now:
            # Nothing done or failed at ``now`` (just tested), yet due by now: the model's
            # figures disagree. The test fails after its quantum, so the clock always moves and
            # a wait reaches its deadline rather than spinning at one instant for ever.
            M._env.sched.sleep(quantum)
        else:
            M._env.sched.block(ready, now + quantum)
        if M._all_done(live, statuses):
            _finish(requests)
            return True
        return False

    @staticmethod
    def Waitall(requests, statuses=None) -> bool:
        """Every request finished; ``ERR_IN_STATUS`` when one failed (its class in its status)."""
        live = [r.req for r in requests if isinstance(r, Request) and r.active]
        M._env.sched.block(lambda: M._latest(live))
        if "error" in M._states(live, statuses):
            M._raise(M.ERR_IN_STATUS)
        _finish(requests)
        return True

    @staticmethod
    def Waitany(requests, status=None) -> int:
        """The index of the first active request to finish (``UNDEFINED`` when none is active)."""
        active = [(i, r) for i, r in enumerate(requests) if isinstance(r, Request) and r.active]
        if not active:
            return M.UNDEFINED

        def first():
            times = [t for t in (r.req.ready_at(w.INF) for _, r in active) if t is not None]
            return min(times, default=None)

        M._env.sched.block(first)
        now = M._env.sched.now()
        for i, r in active:
            at = r.req.ready_at(w.INF)
            if at is not None and at <= now:
                r.Wait(status)
                return i
        raise RuntimeError("Waitany woke with no request finished")


def _finish(requests) -> None:
    for r in requests:
        if isinstance(r, Request) and r.active:
            r._finished()


@M.uncharged
class Prequest(Request):
    """A persistent request: ``start`` posts one more of its operation at each ``Start``."""

    def __init__(self, start=None):
        if isinstance(start, Request):
            super().__init__(start)
            self.start, self.running = getattr(start, "start", None), getattr(start, "running", False)
            return
        self.start, self.running = start, False
        self.req, self.key, self.null = None, object(), start is None

    @property
    def active(self) -> bool:
        return not self.null and self.running

    def _finished(self) -> None:
        self.running = False

    def Start(self) -> None:
        self.req, self.running = self.start(), True

    @staticmethod
    def Startall(requests) -> None:
        for r in requests:
            r.Start()


class Grequest(Request):
    def __init__(self, req=None):
        if isinstance(req, Request) and not isinstance(req, Grequest):
            raise TypeError("expecting a generalized request")
        super().__init__(req)


REQUEST_NULL = Request(None)
M.Request, M.Prequest, M.Grequest, M.REQUEST_NULL = Request, Prequest, Grequest, REQUEST_NULL
