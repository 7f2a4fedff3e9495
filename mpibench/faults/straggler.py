"""Dropping a straggler without waiting for it: the on-time workers agree among themselves.

With ``--straggler-deadline D`` the data plane gives up on a silent peer after
D seconds (:class:`~mpibench.sync.comm.PeerLate`) at the steps where the schedule
makes a worker late by at least D; at every other step it waits the ordinary
deadline, so a step the loaded host makes slow is never taken for a straggler's. The step must then commit among
the workers that are on time, and the control communicator cannot be used
for that: its agreement needs every member, the straggler included. So:

1. *Arrivals.* Every worker announces itself to every member (point to
   point, control communicator) as it starts to reduce. When its data plane
   times out (or completes) it collects the announcements: every on-time
   worker started to reduce within D of the first, so all of theirs are in
   after a short grace. A worker the schedule makes neither late nor dead
   at this step is waited for beyond the grace (up to the ordinary
   deadline): it can only be late because the host is slow, and whether a
   worker is dropped must not depend on the host's load. That is its view
   ``P`` of who is here.
2. *Views.* It sends ``P`` to every member and collects views. A view ``V``
   is *decided* when every worker in ``V`` sent exactly ``V`` and ``V`` may
   commit: a strict majority of the members, or exactly half with the
   lowest member (two disjoint sets can never both qualify, so two groups
   can never both commit the step). Everyone who sees a decided view sees
   the same one, since all of ``V``'s members' views must be in hand.
3. Members of ``V`` build a communicator among themselves
   (``MPI_Comm_create_group``, collective over ``V`` only), redo the step on
   it and commit it with an agreement over ``V``. The first member of ``V``
   then sends the outcome (parameters, reduction, losses) to every worker
   left out.
4. A dropped straggler finds the outcome when it arrives (its injected delay
   ends as soon as the outcome is there: a backup-worker scheme abandons the
   straggler's work), takes the committed parameters, counts its batch as
   consumed and commits the step as a late member, without an agreement.

Whenever no view is decided (nobody late, views that differ, a failure
meanwhile) the workers fall back to the ordinary path: the agreement over
the control communicator, which waits for everyone. A worker late in
sending (it announced itself, then sleeps before its first send) is seen as
present and is therefore waited for, then dropped from the redo the
ordinary way. At most one commit per step holds either way.
"""
from __future__ import annotations

import time

from mpi4py import MPI

from mpibench.sync.comm import PeerLate

from . import ulfm

ARRIVE, VIEW, OUTCOME = 9101, 9102, 9103


def may_commit(view, members) -> bool:
    """A strict majority, or exactly half holding the lowest member."""
    n = len(members)
    return 2 * len(view) > n or (2 * len(view) == n and min(members) in view)


def decided_view(views: dict[int, tuple[int, ...]], members) -> tuple[int, ...] | None:
    """The view every one of whose workers sent it and that may commit, if any."""
    for view in set(views.values()):
        if may_commit(view, members) and all(views.get(w) == view for w in view):
            return view
    return None


def late_at(schedule, step: int, straggler_s: float) -> set[int]:
    """Workers the schedule delays by at least the straggler deadline at ``step``."""
    if straggler_s <= 0:
        return set()
    return {d.rank for d in schedule.delays if step in d.steps and d.seconds >= straggler_s}


def awaited(schedule, step: int, straggler_s: float, members) -> set[int]:
    """Members a view waits for: every one the schedule neither makes late nor kills at ``step``."""
    return set(members) - late_at(schedule, step, straggler_s) - {k.rank for k in schedule.kills if k.step == step}


class DropProtocol:
    def __init__(self, recovery):
        self.recovery = recovery
        self.active = False  # this step is being finished without the late workers
        self.group: tuple[int, ...] = ()  # the on-time workers that commit it
        self.outcome = None  # what a dropped worker was handed
        self._settled = False
        self._sends: list = []
        self._control = None  # the control communicator of the current step
        self._me = -1  # this worker's id
        self._step = -1
        self._announced = None  # (step, attempt) this worker last announced
        self._mail: dict = {ARRIVE: {}, VIEW: {}}  # tag -> (step, attempt) -> {worker: value}

    # ------------------------------------------------------------------ lifecycle
    def enter(self, trainer, step: int) -> None:
        if step != self._step:
            self.active, self.outcome, self.group, self._step = False, None, (), step
        self._control = trainer.comm.mpi
        self._me = trainer.comm.worker_id
        self._sends = [r for r in self._sends if not r.Test()]
        for box in self._mail.values():  # announcements of steps gone by are never read
            for key in [k for k in box if k[0] < step]:
                del box[key]
        data = trainer.data_comm
        if data is not None and data is not trainer.comm:
            data.deadline_s = self.data_deadline_s(step)

    def data_deadline_s(self, step: int) -> float:
        """The data plane's deadline: the straggler deadline only at a step the schedule makes
        someone late (and not while the step is redone patiently), the ordinary one elsewhere."""
        r = self.recovery
        if r.straggler_s > 0 and not r.state.patient and late_at(r.schedule, step, r.straggler_s):
            return r.straggler_s
        return r.deadline_s

    def announce(self, step: int) -> None:
        """Tell every member that this worker reached the reduction of this attempt."""
        if self._control is None or self.active or not self.wanted(None):
            return
        key = (step, self.recovery.state.attempts)
        if self._announced == key:
            return
        self._announced = key
        ranks = self._control.Get_size()
        me = self._control.Get_rank()
        for rank in range(ranks):
            if rank != me:
                self._send(self._control.isend((key, self._me, me), dest=rank, tag=ARRIVE))

    def wanted(self, error) -> bool:
        s = self.recovery.state
        # Every member takes part, also one whose data plane happened to finish: the
        # others must hear from it before they may leave anyone out.
        return (self.recovery.straggler_s > 0 and (error is None or isinstance(error, PeerLate))
                and not s.patient and not s.stalled and not s.no_majority)

    def settled(self) -> bool:
        """Whether the last decision was taken by the drop protocol (no recovery rounds)."""
        settled, self._settled = self._settled, False
        return settled

    def outcome_waiting(self) -> bool:
        """For the injector: has the step been committed without this worker?"""
        if self._control is None or self.recovery.straggler_s <= 0:
            return False
        status = MPI.Status()
        try:
            while self._control.Iprobe(source=MPI.ANY_SOURCE, tag=OUTCOME, status=status):
                message = self._control.recv(source=status.Get_source(), tag=OUTCOME)
                if message[0] == self._step:
                    self.outcome = message
                    return True
        except MPI.Exception:
            pass  # revoked by a peer that fell back: the step's own calls report it
        return False

    # ------------------------------------------------------------------ the loop's hooks
    def commit(self, trainer, step: int, error) -> str | None:
        """The decision, or None to fall back to the agreement over the control communicator."""
        try:
            if self.active:
                return self._finish(trainer, step, error)
            return self._decide(trainer, step)
        except MPI.Exception:
            self.active = False
            return None

    def share(self, trainer, role: str, reduction, loss_rows, effective_batch):
        if role == "late":
            _, _, params, reduction, loss_rows, effective_batch, _ = self.outcome
            trainer.params[...] = params
        else:
            self._result = (reduction, loss_rows, effective_batch)
        return reduction, loss_rows, effective_batch

    def _send(self, request) -> None:
        self._sends.append(request)
        ulfm.track(request)

    # ------------------------------------------------------------------ stages
    def _decide(self, trainer, step: int) -> str | None:
        members = trainer.comm.worker_ids
        attempt = self.recovery.state.attempts
        if self.outcome is not None or self.outcome_waiting():
            return self._dropped(trainer, self.outcome[6])
        self.announce(step)
        here = self._gather(trainer, ARRIVE, (step, attempt), trainer.comm.worker_id,
                            self.recovery.straggler_s / 4, set(members))
        slow = awaited(self.recovery.schedule, step, self.recovery.straggler_s, members) - set(here)
        if slow:  # late only by the host's load: waited for, as every engine waits for it
            here = self._gather(trainer, ARRIVE, (step, attempt), trainer.comm.worker_id,
                                self.recovery.deadline_s, set(here) | slow)
        view = tuple(sorted(here))
        views = self._collect(trainer, VIEW, (step, attempt), view, self.recovery.deadline_s, set(view),
                              stop=lambda got: decided_view(got, members) is not None)
        decided = decided_view(views, members)
        if decided is None or len(decided) == len(members):
            return None
        if trainer.comm.worker_id not in decided:
            return self._await_outcome(trainer, step, decided)
        self._regroup(trainer, decided)
        return "retry"

    def _collect(self, trainer, tag, key, value, wait_s: float, expected: set, stop=None) -> dict:
        """Send ``value`` under ``key`` to every other member; gather the others' for ``key``."""
        control, me = trainer.comm.mpi, trainer.comm.worker_id
        for rank, w in enumerate(trainer.comm.worker_ids):
            if w != me:
                self._send(control.isend((key, me, value), dest=rank, tag=tag))
        return self._gather(trainer, tag, key, value, wait_s, expected, stop)

    def _gather(self, trainer, tag, key, value, wait_s: float, expected: set, stop=None) -> dict:
        """The others' messages for ``key`` (stale ones are dropped) until all ``expected``
        are in, ``stop`` says enough, or ``wait_s`` passes."""
        control, me = trainer.comm.mpi, trainer.comm.worker_id
        box = self._mail[tag].setdefault(key, {})
        box[me] = value
        deadline = time.monotonic() + wait_s
        status = MPI.Status()
        while not expected <= set(box) and not (stop and stop(box)) and time.monotonic() < deadline:
            if not control.Iprobe(source=MPI.ANY_SOURCE, tag=tag, status=status):
                time.sleep(0.0002)
                continue
            their_key, sender, their_value = control.recv(source=status.Get_source(), tag=tag)
            if their_key[0] >= self._step:  # early ones wait in the mailbox, stale ones go
                self._mail[tag].setdefault(their_key, {})[sender] = their_value
        return dict(box)

    def _regroup(self, trainer, group: tuple[int, ...]) -> None:
        """Continue the step among ``group`` on a communicator only they create."""
        control = trainer.comm
        ulfm.note_disturbance()  # the old data communicator may hold cancelled requests
        ranks = [control.worker_ids.index(w) for w in group]
        world_group = control.mpi.Get_group()
        sub = world_group.Incl(ranks)
        new = control.mpi.Create_group(sub, tag=OUTCOME)
        sub.Free()
        world_group.Free()
        new.Set_errhandler(MPI.ERRORS_RETURN)
        ulfm.settle(new)
        old = trainer.data_comm
        trainer.set_data_comm(self.recovery.make_comm(new, group, data=True))
        if old is not None and old.mpi != control.mpi:
            ulfm.free(old.mpi)  # not revoked: the straggler still times out on it alone
        self._late(trainer, group)
        self.active, self._settled, self.group = True, True, group

    def _await_outcome(self, trainer, step: int, group) -> str | None:
        deadline = time.monotonic() + self.recovery.deadline_s
        while time.monotonic() < deadline:
            if self.outcome_waiting():
                return self._dropped(trainer, group)
            time.sleep(0.0005)
        return None

    def _dropped(self, trainer, group) -> str | None:
        if self.outcome[1] != "commit":  # the on-time workers failed: recover with them
            self.outcome = None
            return None
        ulfm.note_disturbance()  # as its peers did: everyone leaves through the same exit
        self.recovery.injector.abandoned = False  # handled: the late attempt takes the outcome
        self._late(trainer, group)
        trainer.set_data_comm(None)
        self.active, self._settled, self.group = True, True, tuple(group)
        return "retry"

    def _late(self, trainer, group) -> None:
        self.recovery.state.late = set(trainer.comm.worker_ids) - set(group)

    def _finish(self, trainer, step: int, error) -> str | None:
        """The redone attempt: the on-time workers agree among themselves; a late one commits."""
        if self.recovery.role(trainer) == "late":
            return "commit" if error is None else None
        ok = error is None
        data = trainer.data_comm.mpi
        if not ok:
            ulfm.revoke(data)
        committed = ulfm.agree(data, ok)
        if trainer.data_comm.rank == 0:
            result = self._result if committed else (None, None, None)
            message = (step, "commit" if committed else "retry", trainer.params.copy(), *result, self.group)
            for w in self.recovery.state.late:
                dest = trainer.comm.worker_ids.index(w)
                self._send(trainer.comm.mpi.isend(message, dest=dest, tag=OUTCOME))
        if committed:
            return "commit"
        self.active = False
        self.recovery.state.late = set()
        return None
