"""A deterministic scheduler: simulated processes as greenlets, one running at a time, on virtual clocks.

Every simulated MPI process runs its real Python code (the job, the worker
loop, the strategies, the fault wrapper and recovery) in a greenlet of its
own (a coroutine with its own stack, switched within one thread): a running
actor keeps going until it blocks (a wait that is not yet satisfied, a
sleep), and the scheduler then switches to the actor that can go on earliest
in virtual time, ties broken by the actor's index. Which actor runs next
therefore depends on nothing but the virtual clocks and the simulated state,
never on the operating system or the machine's load: the same inputs give the
same interleaving. (Threads handed a baton did the same at ~0.5 ms per switch
on this loaded 2-core machine, the OS's wake-up latency; a greenlet switch
costs microseconds.)

Each actor has its own clock (processes compute at the same time). It moves
when the actor waits (to the time its wait is satisfied), sleeps, and, with
``measure_compute``, by the time the actor spent running between two waits:
its thread CPU time (``"cpu"``), or the host's clock (``"wall"``, which also
charges what other processes on a loaded host take from it, as a real rank
would suffer it); timings then follow the host and are no longer bit-exact.

A blocked actor waits on a condition, a function returning the virtual time
at which it is satisfied (None: not yet), optionally with a time at which it
wakes anyway. When no actor can go on and no timer is pending, the world is
deadlocked: :meth:`Scheduler.run` returns and the caller decides (the process
model ends the stuck processes as the step watchdog would). An actor that never
blocks (a loop in the simulated code) holds the host instead: the process model
bounds the job's wall time and the bound ends it with :class:`WallLimitReached`.

Timers (``call_at``) run a function in the scheduler's thread at a virtual
time, on behalf of an actor (the process model's step watchdog).
"""
from __future__ import annotations

import heapq
import time as _time
from typing import Callable

import greenlet

INF = float("inf")
_thread_time = _time.thread_time
CLOCKS = {"cpu": _time.thread_time, "wall": _time.perf_counter}


class Killed(BaseException):
    """Raised in an actor whose process was killed or exited: unwinds its stack."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class WallLimitReached(BaseException):
    """The host's wall clock passed the simulated job's bound: the job is ended as a hang.

    A BaseException, so that no handler of the simulated code keeps it; the scheduler also
    raises it again at every later block, for code that catches everything."""


class Actor:
    """One greenlet of a simulated process."""

    def __init__(self, sched: "Scheduler", index: int, name: str, body: Callable[[], object], clock: float):
        self.sched, self.index, self.name, self.body = sched, index, name, body
        self.clock = clock
        self.cond: Callable[[], float | None] | None = None
        self.until = INF
        self.state = "new"  # new, blocked, running, done
        self.result = None
        self.killed: Killed | None = None  # set: raise it when the actor runs next
        self.process = None  # the process model's handle
        self._slice_cpu = 0.0
        self.in_library = 0  # inside the simulated library: its own CPU time is not charged
        self.glet = greenlet.greenlet(self._main, parent=sched.home)

    def now(self) -> float:
        if self.sched.measure_compute and self.state == "running" and not self.in_library:
            return self.clock + self.sched.cpu_scale * (self.sched.host_clock() - self._slice_cpu)
        return self.clock

    def _charge(self) -> None:
        if self.sched.measure_compute:  # else the host's clock is never read: it costs a system call
            self.clock = self.now()
            self._slice_cpu = self.sched.host_clock()

    def _main(self) -> None:
        if self.sched.measure_compute:
            self._slice_cpu = self.sched.host_clock()
        try:
            if self.killed is not None:
                raise self.killed
            self.result = ("return", self.body())
        except WallLimitReached:
            raise  # out of this greenlet to the scheduler's loop, and out of it
        except Killed as exc:
            self.result = ("killed", exc.code)
        except SystemExit as exc:
            self.result = ("return", exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1))
        except BaseException as exc:  # noqa: BLE001 - a crash of the simulated process, reported
            self.result = ("crash", exc)
        self.state = "done"  # returning switches back to the scheduler (the parent)


class Scheduler:
    def __init__(self, measure_compute: bool | str = False, cpu_scale: float = 1.0):
        self.measure_compute, self.cpu_scale = bool(measure_compute), cpu_scale
        self.host_clock = CLOCKS["wall" if measure_compute == "wall" else "cpu"]
        self.actors: list[Actor] = []
        self.home = greenlet.getcurrent()  # where the scheduler's loop runs
        self.current: Actor | None = None
        self._timers: list = []  # heap of (time, seq, fn, actor)
        self._seq = 0
        self.switches = 0
        self.wall_limit_reached = False  # set by the host's timer (mpibench.sim.process)

    # ------------------------------------------------------------------ inside actors
    def me(self) -> Actor | None:
        return self.current if greenlet.getcurrent() is not self.home or self.current is not None \
            and self.current.state == "timer" else None

    def now(self) -> float:
        actor = self.me()
        return actor.now() if actor is not None else 0.0

    def spawn(self, name: str, body: Callable[[], object], clock: float | None = None) -> Actor:
        me = self.me()
        start = clock if clock is not None else (me.now() if me is not None else 0.0)
        actor = Actor(self, len(self.actors), name, body, start)
        self.actors.append(actor)
        return actor

    def block(self, cond: Callable[[], float | None], until: float = INF) -> bool:
        """Wait until ``cond`` holds (True) or the clock reaches ``until`` (False)."""
        actor = self.me()
        actor._charge()
        if self.wall_limit_reached:
            raise WallLimitReached()
        if actor.killed is not None:
            raise actor.killed
        at = cond()
        if at is not None and at <= actor.clock:
            return True
        actor.cond, actor.until, actor.state = cond, until, "blocked"
        self.home.switch()
        if self.measure_compute:
            actor._slice_cpu = self.host_clock()
        if actor.killed is not None:
            raise actor.killed
        return actor.woke_by_cond

    def enter_library(self) -> Actor | None:
        """The calling actor enters the simulated library: its CPU time up to here is charged,
        what the simulator itself spends from here on is not (the library's own cost is the
        network model's per-message and per-call figures)."""
        actor = self.me()
        if actor is not None:
            if not actor.in_library:
                actor._charge()
            actor.in_library += 1
        return actor

    def leave_library(self, actor: Actor | None) -> None:
        if actor is not None:
            actor.in_library -= 1
            if not actor.in_library and self.measure_compute:
                actor._slice_cpu = self.host_clock()

    def sleep(self, seconds: float) -> None:
        actor = self.me()
        self.block(lambda: None, actor.now() + max(0.0, seconds))

    def call_at(self, at: float, fn: Callable[[], None], actor: Actor) -> list:
        """Run ``fn`` at virtual time ``at`` on behalf of ``actor``; the returned handle cancels it."""
        self._seq += 1
        entry = [at, self._seq, fn, actor, True]
        heapq.heappush(self._timers, entry)
        return entry

    @staticmethod
    def cancel(entry: list) -> None:
        entry[4] = False

    def kill(self, actor: Actor, code: int) -> None:
        """End ``actor``: it raises :class:`Killed` where it stands when it runs next."""
        if actor.state != "done" and actor.killed is None:
            actor.killed = Killed(code)

    # ------------------------------------------------------------------ the loop
    def _candidate(self, actor: Actor) -> tuple[float, bool] | None:
        if actor.state == "done":
            return None
        if actor.state == "new" or actor.killed is not None:
            return actor.clock, True
        if actor.state != "blocked":
            return None
        at = actor.cond() if actor.cond is not None else None
        if at is not None and at <= actor.until:
            return max(actor.clock, at), True
        if actor.until < INF:
            return max(actor.clock, actor.until), False
        return None

    def _next_timer(self) -> float:
        while self._timers and not self._timers[0][4]:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else INF

    def run(self) -> list[Actor]:
        """Run until every actor is done; returns the actors left blocked forever (deadlock)."""
        while True:
            if self.wall_limit_reached:
                raise WallLimitReached()
            best, best_at, by_cond = None, INF, False
            for actor in self.actors:
                c = self._candidate(actor)
                if c is not None and c[0] < best_at:
                    best, best_at, by_cond = actor, c[0], c[1]
            timer_at = self._next_timer()
            if timer_at <= best_at and timer_at < INF:
                at, _, fn, owner, _ = heapq.heappop(self._timers)
                self._fire(fn, owner, at)
                continue
            if best is None:
                return [a for a in self.actors if a.state != "done"]
            self._switch(best, best_at, by_cond)

    def _switch(self, actor: Actor, at: float, by_cond: bool) -> None:
        actor.clock = max(actor.clock, at)
        actor.woke_by_cond = by_cond
        actor.state, actor.cond, actor.until = "running", None, INF
        self.switches += 1
        self.current = actor
        actor.glet.switch()
        self.current = None

    def _fire(self, fn, owner: Actor, at: float) -> None:
        """A timer runs in this thread, seen by the process model as ``owner`` at time ``at``."""
        if owner.state == "done":
            return
        saved_clock, saved_state = owner.clock, owner.state
        owner.clock, owner.state = max(owner.clock, at), "timer"
        self.current = owner
        try:
            fn()
        except Killed:
            pass  # the process model has marked the process's actors killed
        finally:
            self.current = None
            owner.state = saved_state
            owner.clock = max(saved_clock, owner.clock) if saved_state == "blocked" else saved_clock
