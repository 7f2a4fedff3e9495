"""``threading.Thread`` and ``threading.Event`` inside a simulated process, on its virtual clock.

A thread a simulated process starts (the step watchdog's) is one more actor of that process:
it runs when the scheduler picks it, sees the process's own clock, pid and ``COMM_WORLD``,
and ends with the process (a daemon thread: the process ending, by return, exit or kill, ends
it; a non-daemon one is ended too, since nothing joins it here). Its uncaught exception is
printed as Python's ``threading.excepthook`` prints it, and the process goes on. An
``Event.wait`` blocks the calling actor through the scheduler, so a process waiting on an event
that is never set is a simulated hang the engine can see (or that the process's own watchdog
ends), never a blocked operating-system thread.

:func:`install` is the process model's hook: outside a simulated process the real classes are
built.
"""
from __future__ import annotations

import sys
import threading
import traceback

from .scheduler import INF

_real = {"Thread": threading.Thread, "Event": threading.Event}


class SimEvent:
    """An event whose waiters are simulated actors; ``set_s`` is the virtual time it was set."""

    def __init__(self, env):
        self._env, self.set_s = env, None

    def is_set(self) -> bool:
        return self.set_s is not None

    isSet = is_set

    def set(self) -> None:
        if self.set_s is None:
            self.set_s = self._env.sched.now()

    def clear(self) -> None:
        self.set_s = None

    def wait(self, timeout: float | None = None) -> bool:
        if self.set_s is not None:
            return True
        sched = self._env.sched
        until = INF if timeout is None else sched.now() + max(0.0, timeout)
        sched.block(lambda: self.set_s, until)
        return self.set_s is not None


class SimThread:
    """A thread of the calling simulated process: an actor of its own, started by ``start``."""

    def __init__(self, env, group=None, target=None, name=None, args=(), kwargs=None, *, daemon=None):
        self._env, self._target, self._args, self._kwargs = env, target, tuple(args), dict(kwargs or {})
        self.name, self.daemon = name or "simulated-thread", bool(daemon)
        self._actor = None

    def run(self) -> None:
        if self._target is not None:
            self._target(*self._args, **self._kwargs)

    def _body(self) -> None:
        try:
            self.run()
        except Exception:  # noqa: BLE001 - as threading.excepthook: printed, the process goes on
            sys.stderr.write(f"Exception in thread {self.name}:\n{traceback.format_exc()}")

    def start(self) -> None:
        if self._actor is not None:
            raise RuntimeError("threads can only be started once")
        self._actor = self._env.start_thread(self._body, self.name)

    def is_alive(self) -> bool:
        return self._actor is not None and self._actor.state != "done"

    def join(self, timeout: float | None = None) -> None:
        sched = self._env.sched
        until = INF if timeout is None else sched.now() + max(0.0, timeout)
        sched.block(lambda: sched.now() if not self.is_alive() else None, until)


def _in_actor(env_of) -> object | None:
    """The process model when the caller (two frames up) is code a simulated process runs,
    never the threading module itself (its own locks and events stay real)."""
    env = env_of()
    if env is None or env.sched.me() is None or sys._getframe(2).f_globals.get("__name__") == "threading":
        return None
    return env


def install(env_of) -> None:
    """``threading.Thread`` and ``threading.Event`` build the simulated ones when called by a
    simulated process (``env_of()``: the process model, or None); subclasses stay real."""
    real_thread, real_event = _real["Thread"], _real["Event"]

    class Thread(real_thread):
        def __new__(cls, *args, **kwargs):
            env = _in_actor(env_of) if cls is Thread else None
            return SimThread(env, *args, **kwargs) if env is not None else super().__new__(cls)

    class Event(real_event):
        def __new__(cls, *args, **kwargs):
            env = _in_actor(env_of) if cls is Event else None
            return SimEvent(env) if env is not None else super().__new__(cls)

    threading.Thread, threading.Event = Thread, Event
