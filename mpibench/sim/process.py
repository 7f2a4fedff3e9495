"""The simulated process model: many MPI processes in one Python process, on virtual time.

:func:`install` makes this Python process a host of simulated MPI processes,
once and for good: ``mpi4py.MPI`` becomes :mod:`mpibench.sim.mpi` (also in
modules that imported the real one already), and the few operating-system
calls through which mpibench's code meets time and processes answer, inside
a simulated process, as that process would see them: ``time.monotonic``,
``time.perf_counter`` and ``time.sleep`` follow its virtual clock,
``os.getpid`` gives its own pid, ``os.kill`` of its own pid with SIGKILL
kills it (the fault wrapper's scheduled kill), ``os._exit`` ends it, and
``threading.Timer`` fires on the virtual clock, and ``threading.Thread`` and
``threading.Event`` (the step watchdog, the quorum rule's stall) are actors and
waits of that process (:mod:`.threads`). Outside
a simulated process (the driver's own thread) every call is the real one.
This is the one seam: the worker loop, the strategies and the recovery do
not know which engine runs them.

:func:`run_world` starts ``ranks`` processes running ``body`` and returns
each one's exit status, as ``mpirun`` would see them.
"""
from __future__ import annotations

import builtins
import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

from . import handles  # noqa: F401 - registers the handle class as MPI.Comm
from . import mpi as sim_mpi
from . import threads
from .collectives import RESULTS
from .network import Network
from .scheduler import INF, Scheduler, WallLimitReached
from .world import CommState, Options, Proc, World

_real = {"monotonic": time.monotonic, "perf_counter": time.perf_counter, "sleep": time.sleep,
         "getpid": os.getpid, "kill": os.kill, "_exit": os._exit, "Timer": threading.Timer,
         "open": builtins.open}
_env: "Env | None" = None
PID_BASE = 40000  # simulated pids: well apart from this host's


def _actor():
    env = _env
    return env.sched.me() if env is not None else None


def _monotonic():
    actor = _actor()
    return actor.now() if actor is not None else _real["monotonic"]()


def _perf_counter():
    actor = _actor()
    return actor.now() if actor is not None else _real["perf_counter"]()


def _sleep(seconds):
    actor = _actor()
    if actor is None:
        return _real["sleep"](seconds)
    if seconds > 0:
        _env.sched.sleep(seconds)
    else:
        _env.check_alive()
    return None


def _getpid():
    actor = _actor()
    return actor.process.pid if actor is not None else _real["getpid"]()


def _kill(pid, sig):
    actor = _actor()
    if actor is not None and pid == actor.process.pid and sig == signal.SIGKILL:
        _env.kill(actor.process, -signal.SIGKILL)
    return _real["kill"](pid, sig)


def _exit(code):
    actor = _actor()
    if actor is not None:
        _env.kill(actor.process, code)
    _real["_exit"](code)


def _open(*args, **kwargs):
    """A file a simulated process opens is closed when that process ends (mpibench's writers
    flush every record, so nothing a real SIGKILL would lose is kept)."""
    f = _real["open"](*args, **kwargs)
    actor = _actor()
    if actor is not None:
        actor.process.files.append(f)
    return f


class _Timer:
    """``threading.Timer`` inside a simulated process: fires on its virtual clock."""

    def __init__(self, interval, function, args=None, kwargs=None):
        self.interval, self.function = interval, function
        self.args, self.kwargs = args or (), kwargs or {}
        self.daemon, self._entry = True, None

    def start(self):
        actor = _actor()
        self._entry = _env.sched.call_at(actor.now() + self.interval,
                                         lambda: self.function(*self.args, **self.kwargs), actor)

    def cancel(self):
        if self._entry is not None:
            Scheduler.cancel(self._entry)


def _timer(*args, **kwargs):
    return _Timer(*args, **kwargs) if _actor() is not None else _real["Timer"](*args, **kwargs)


def install() -> None:
    """Host simulated MPI processes in this Python process from now on (idempotent)."""
    import mpi4py

    real = sys.modules.get("mpi4py.MPI")
    if real is not sim_mpi:
        sys.modules["mpi4py.MPI"] = sim_mpi
        mpi4py.MPI = sim_mpi
        for module in list(sys.modules.values()):  # names bound before the install
            if real is not None and getattr(module, "MPI", None) is real:
                module.MPI = sim_mpi
    time.monotonic, time.perf_counter, time.sleep = _monotonic, _perf_counter, _sleep
    os.getpid, os.kill, os._exit = _getpid, _kill, _exit
    threading.Timer = _timer
    threads.install(lambda: _env)
    builtins.open = _open
    os.environ["MPIBENCH_ASSUME_ULFM"] = "1"  # the simulated library implements ULFM


@dataclass
class WorldResult:
    """How each simulated process ended, as the launcher would see it."""

    codes: dict = field(default_factory=dict)  # gid -> exit status (negative: killed by that signal)
    deadlocked: list = field(default_factory=list)  # gids still waiting when nothing could move
    virtual_s: float = 0.0
    switches: int = 0
    spawned: int = 0
    auto_choices: dict = field(default_factory=dict)  # auto's record as the job left it (mpibench.sim.jobs)
    over_wall_limit: bool = False  # ended by run_world's wall_limit_s (deadlocked: the processes still running)


class Env:
    """One simulated job: its scheduler, library state and the program spawned processes run."""

    def __init__(self, net: Network, options: Options, spawn_body, measure_compute: bool, cpu_scale: float = 1.0):
        self.sched = Scheduler(measure_compute=measure_compute, cpu_scale=cpu_scale)
        self.world = World(self.sched, net, options)
        self.world.handle = sim_mpi._handle
        self.world.results = RESULTS
        self.world.spawner = self._spawn
        self.spawn_body = spawn_body
        self._selves: dict[int, object] = {}

    def proc(self) -> Proc:
        return self.sched.me().process

    def check_alive(self) -> None:
        actor = self.sched.me()
        if actor is not None and actor.killed is not None:
            raise actor.killed

    def own_comm(self, which: str):
        proc = self.proc()
        if which == "COMM_WORLD":
            return proc.world
        if proc.gid not in self._selves:
            self._selves[proc.gid] = sim_mpi._handle(CommState(self.world, [proc]), 0)
        return self._selves[proc.gid]

    def start(self, body, job: int, clock: float) -> Proc:
        proc = Proc(gid=len(self.world.procs), pid=PID_BASE + len(self.world.procs), job=job)
        self.world.procs.append(proc)

        def main():
            try:
                return body()
            finally:  # the process ends: so do its threads, as the OS ends them
                for thread in proc.threads:
                    self.sched.kill(thread, 0)
        proc.actor = self.sched.spawn(f"p{proc.gid}", main, clock)
        proc.actor.process = proc
        return proc

    def start_thread(self, body, name: str):
        """A thread of the calling process: an actor of its own, on the process's clock."""
        proc = self.proc()
        actor = self.sched.spawn(f"p{proc.gid}:{name}", body, self.sched.now())
        actor.process = proc
        proc.threads.append(actor)
        return actor

    def _spawn(self, count: int, at: float) -> list[Proc]:
        self.world.spawned += count
        job = 1 + max(p.job for p in self.world.procs)
        children = [self.start(self.spawn_body, job, at) for _ in range(count)]
        world = CommState(self.world, children)
        for rank, child in enumerate(children):
            child.world = sim_mpi._handle(world, rank)
        return children

    def kill(self, proc: Proc, code: int) -> None:
        """``proc`` dies now (its death is noticed by the others ``notice_s`` later)."""
        if proc.death_s == INF:
            proc.death_s = self.sched.now()
            proc.exit_code = code
        for actor in (proc.actor, *proc.threads):
            self.sched.kill(actor, code)
        me = self.sched.me()
        if me is not None and me.process is proc:
            raise me.killed

    def abort(self, code: int) -> None:
        """``MPI_Abort``: every process ends with ``code``."""
        me = self.sched.me()
        for proc in self.world.procs:
            if me is None or proc is not me.process:
                self.kill(proc, code)
        if me is not None:
            self.kill(me.process, code)


# Worlds ended by their wall bound: their greenlets are never resumed (resuming one would run
# its code on), nor collected (collecting one throws into it, and its code would run on too).
_ABANDONED: list = []


@contextlib.contextmanager
def _wall_bound(sched: Scheduler, limit_s: float | None):
    """Within: once ``limit_s`` seconds of the host's wall clock pass, the job ends
    (:class:`WallLimitReached` wherever the simulated code stands). Only the main thread
    receives the timer's signal; elsewhere the job runs unbounded."""
    if limit_s is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def reached(signum, frame):
        sched.wall_limit_reached = True
        raise WallLimitReached()

    before = signal.signal(signal.SIGALRM, reached)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def _run_to_end(env: Env, ranks: int, body, result: WorldResult) -> None:
    procs = [env.start(body, 0, 0.0) for _ in range(ranks)]
    world = CommState(env.world, procs)
    for rank, proc in enumerate(procs):
        proc.world = sim_mpi._handle(world, rank)
    while True:
        stuck = env.sched.run()
        if not stuck:
            return
        result.deadlocked += sorted({a.process.gid for a in stuck} - set(result.deadlocked))
        for actor in stuck:  # as the launcher's timeout would: end them, let them unwind
            env.kill(actor.process, 1)


def run_world(ranks: int, body, spawn_body=None, net: Network | None = None, options: Options | None = None,
              measure_compute: bool = False, cpu_scale: float = 1.0, wall_limit_s: float | None = None) -> WorldResult:
    """Run ``body()`` in ``ranks`` simulated processes to the end; their exit statuses.

    ``wall_limit_s``: the most host seconds the job may take; past it the processes still
    running are ended and listed as ``deadlocked`` (``over_wall_limit`` set), as a launcher's
    timeout ends a hung job."""
    global _env
    install()
    env = Env(net or Network(), options or Options(), spawn_body, measure_compute, cpu_scale)
    sim_mpi.bind(env)
    _env = env
    result = WorldResult()
    try:
        with _wall_bound(env.sched, wall_limit_s):
            _run_to_end(env, ranks, body, result)
    except WallLimitReached:
        result.over_wall_limit = True
        result.deadlocked = sorted(p.gid for p in env.world.procs if p.actor.state != "done")
        _ABANDONED.append(env)
    finally:
        _env = None
        for proc in env.world.procs:
            for f in proc.files:
                f.close()
    for proc in env.world.procs:
        kind, value = proc.actor.result or ("killed", None)
        result.codes[proc.gid] = proc.exit_code if kind == "killed" and proc.exit_code is not None else (
            value if kind == "return" else 1)
    result.virtual_s = max((a.clock for p in env.world.procs for a in (p.actor, *p.threads)), default=0.0)
    result.switches, result.spawned = env.sched.switches, env.world.spawned
    return result
