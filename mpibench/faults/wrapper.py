"""The communicator wrapper that carries out a schedule on this rank.

:class:`Injector` holds one process's view of the schedule: which worker it
is, where the worker loop stands (``mark(step, phase)``) and how many
data-plane messages it has sent in the current reduction. It kills the
process (SIGKILL of its own pid) at the scheduled phase, sleeps where a delay
is scheduled, and answers whether a peer is reachable under the partition of
the current step.

:class:`FaultComm` is a :class:`~mpibench.sync.comm.Comm` whose data-plane calls
(``sendrecv/send/recv/isend/irecv``, the collectives and ``iallreduce``) go through the
injector first: a message across the cut raises
:class:`~mpibench.sync.comm.PeerUnreachable`, a send counts towards a
mid-reduction kill, a ``send`` delay sleeps before the first send of a step.
The control plane (agreement, evidence gathering) uses the raw MPI
communicator and is never cut. Strategies see only the communicator.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from typing import Sequence

from mpibench.sync.comm import Comm, PeerLate, PeerUnreachable

from . import kinds
from .schedule import Schedule


# The loop's phases in order; "reduce" is where mid-reduction kills count messages.
LOOP_ORDER = {"before_compute": 0, "reduce": 1, "mid_reduction": 1, "after_reduce": 2, "mid_gather": 2,
              "after_apply": 3}


class Injector:
    """One process's share of the schedule."""

    def __init__(self, schedule: Schedule, worker_id: int, straggler_deadline_s: float = 0.0,
                 spent_kills: bool = False):
        self.schedule = schedule
        self.worker_id = worker_id
        self.straggler_deadline_s = straggler_deadline_s
        self.kills = {} if spent_kills else {(k.step, k.phase): k for k in schedule.kills if k.rank == worker_id}
        self.step, self.phase = -1, ""
        self.messages = 0
        self.gathered = 0  # data-plane messages since the update began (a sharded all-gather)
        self.slept_s = 0.0  # delay injected in the current step
        self._delayed_steps: set[int] = set()
        self._send_delay_s = 0.0
        self.heartbeat = time.monotonic()
        # Asked while a delay sleeps: has the step been committed without this worker?
        # Then the delay ends at once and the data plane reports the worker late.
        self.wake = lambda: False
        self.abandoned = False
        # Kinds whose effect is their own module's ``on_mark`` (outside kinds); the built-in
        # kinds' effects are this class's own (_maybe_die, _maybe_delay, sent, reachable).
        self.hooks = [(kinds.of(e).on_mark, e) for e in schedule.events if kinds.of(e).on_mark is not None]

    # -- where the loop stands
    def enter(self, step: int) -> None:
        """A step begins (or is attempted again): the partition of ``step`` applies."""
        self.heartbeat = time.monotonic()
        if step != self.step:
            self.slept_s = 0.0
            self.abandoned = False
        self.step = step

    def mark(self, step: int, phase: str) -> None:
        self.enter(step)
        self.phase = phase
        if phase == "reduce":
            self.messages = 0
        if phase == "after_reduce":
            self.gathered = 0
        self._maybe_die(step, phase)
        if phase == "before_compute":
            self._maybe_delay(step)
        for on_mark, event in self.hooks:
            on_mark(event, self, step, phase)

    def _maybe_die(self, step: int, phase: str) -> None:
        # A kill whose phase the loop has passed without it firing (a reduction with
        # fewer messages than scheduled; a strategy that applies no update on this
        # rank) fires at the next mark, so every scheduled kill happens in its step.
        if phase == "recovery":
            due = [self.kills.get((step, "recovery"))]
        else:
            now = LOOP_ORDER.get(phase, -1)
            due = [k for (s, p), k in self.kills.items() if s == step and 0 <= LOOP_ORDER.get(p, 9) <= now
                   and not (p == "mid_reduction" and phase == "reduce")
                   and not (p == "mid_gather" and phase == "after_reduce")]
        for kill in due:
            if kill is not None:
                self.die(kill)

    def die(self, kill) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)  # never reached: SIGKILL cannot be caught

    def _maybe_delay(self, step: int) -> None:
        delay = self.schedule.delay_at(self.worker_id, step)
        if delay is None or step in self._delayed_steps:
            return  # a redo of the step is not delayed again
        self._delayed_steps.add(step)
        self.slept_s = delay.seconds
        if delay.where == "compute":
            self._sleep(delay.seconds)
        else:
            self._send_delay_s = delay.seconds

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` as a delay does (ended early when the step commits without this
        worker); counted towards this step's lateness. For kinds' ``on_mark``."""
        self.slept_s += seconds
        self._sleep(seconds)

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.abandoned and time.monotonic() < end:
            time.sleep(min(0.002, max(0.0, end - time.monotonic())))
            self.abandoned = self.wake()

    def late(self) -> bool:
        """Whether this worker was scheduled late beyond the straggler deadline this step."""
        d = self.straggler_deadline_s
        return d > 0 and self.slept_s >= d

    # -- data-plane events
    def before_send(self) -> None:
        if self._send_delay_s:
            seconds, self._send_delay_s = self._send_delay_s, 0.0
            self._sleep(seconds)

    def sent(self) -> None:
        if self.phase == "after_reduce":
            self.gathered += 1
            kill = self.kills.get((self.step, "mid_gather"))
            if kill is not None and self.gathered >= kill.messages:
                self.die(kill)
        if self.phase != "reduce":
            return
        self.messages += 1
        kill = self.kills.get((self.step, "mid_reduction"))
        if kill is not None and self.messages >= kill.messages:
            self.die(kill)

    def reachable(self, peer_worker: int) -> bool:
        cut = self.schedule.partition_at(self.step)
        if cut is None or peer_worker == self.worker_id:
            return True
        return cut.side_of(peer_worker) == cut.side_of(self.worker_id)

    def reachable_set(self, workers: Sequence[int]) -> tuple[int, ...]:
        return tuple(w for w in workers if self.reachable(w))


class FaultComm(Comm):
    """A Comm whose data plane obeys the schedule of this rank's injector."""

    def __init__(self, mpi_comm, worker_ids, deadline_s: float, injector: Injector, on_reduce=None):
        super().__init__(mpi_comm, worker_ids, deadline_s)
        self.injector = injector
        self.on_reduce = on_reduce  # told when this worker is about to reduce (straggler drops)

    def mark(self, step: int, phase: str) -> None:
        self.injector.mark(step, phase)
        if phase == "reduce" and self.on_reduce is not None:
            self.on_reduce(step)
        if self.injector.abandoned and phase in ("before_compute", "reduce"):
            raise PeerLate("the step was committed without this worker (late)",
                           [w for w in self.worker_ids if w != self.worker_id])

    def _guard(self, peers: Sequence[int]) -> None:
        if self.injector.abandoned:
            raise PeerLate("the step was committed without this worker (late)",
                           [w for w in self.worker_ids if w != self.worker_id])
        ids = [self.worker_ids[p] for p in peers]
        cut = [w for w in ids if not self.injector.reachable(w)]
        if cut:
            raise PeerUnreachable(f"worker(s) {' '.join(map(str, cut))} across the partition", cut)

    # point to point
    def sendrecv(self, sendbuf, dest, recvbuf, source, tag=0):
        self._guard((dest, source))
        self.injector.before_send()
        super().sendrecv(sendbuf, dest, recvbuf, source, tag)
        self.injector.sent()

    def send(self, buf, dest, tag=0):
        self._guard((dest,))
        self.injector.before_send()
        super().send(buf, dest, tag)
        self.injector.sent()

    def recv(self, buf, source, tag=0):
        self._guard((source,))
        super().recv(buf, source, tag)

    def isend(self, buf, dest, tag=0):
        self._guard((dest,))
        self.injector.before_send()
        request = super().isend(buf, dest, tag)
        self.injector.sent()
        return request

    def irecv(self, buf, source, tag=0):
        self._guard((source,))
        return super().irecv(buf, source, tag)

    # collectives: every member is a peer
    def _collective(self, call, *args):
        self._guard(range(self.size))
        self.injector.before_send()
        super()._collective(call, *args)
        self.injector.sent()

    def iallreduce(self, sendbuf, recvbuf, op="sum"):
        """A started all-reduce is one message, counted once it is in flight: a kill after k
        messages dies with its k-th bucket started and not yet complete."""
        self._guard(range(self.size))
        self.injector.before_send()
        started = super().iallreduce(sendbuf, recvbuf, op)
        self.injector.sent()
        return started
