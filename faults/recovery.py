"""What the survivors do about faults: the step group, the commit decision, ULFM recovery.

Each step runs on a *data* communicator (the step group: members that may
contribute) while agreement, recovery and evidence use the *control*
communicator of the whole membership. A step's attempt ends with one ULFM
agreement over the control communicator: it commits only if every member's
data plane succeeded and nobody was late beyond the straggler deadline, so
all members take the same decision and a dead, cut-off or late worker's
partial contribution never reaches an applied update (the loop rolls back).

After a failed attempt, :meth:`FaultRecovery.handle` repeats until the
membership is clean: agree whether anyone died; if so shrink (and, under
``--recovery respawn``, spawn replacements that take the dead workers'
shards); gather each member's report (late? which peers can it reach?);
derive the next attempt's step group: the strict-majority side of a
partition (the others stall, keep their parameters and consume nothing),
minus the late workers (dropped from this step only). Every stage that could
be interrupted by a further failure is followed by an agreement, so a death
during recovery starts another round instead of splitting the survivors.

The data communicator is rebuilt after every failed attempt, so a late
worker's messages die with the old one and never reach a later step.
"""
from __future__ import annotations

from mpi4py import MPI

from mpibench.sync.comm import translate
from mpibench.base.records import ranks_text
from mpibench.engine.worker import Recovery, digest

from . import ulfm
from .schedule import Schedule
from .wrapper import FaultComm, Injector

MAX_ROUNDS = 8  # recovery rounds for one failed attempt
MAX_ATTEMPTS = 6  # attempts of one step before the run is declared stuck


class RunStuck(RuntimeError):
    """The run cannot make progress; the message names the step and the ranks."""


class FaultRecovery(Recovery):
    def __init__(self, config, schedule: Schedule, injector: Injector, world_size: int,
                 pids: dict[int, int], continuation=None):
        self.config, self.schedule, self.injector = config, schedule, injector
        self.world_size = world_size
        self.policy = config.recovery
        self.deadline_s = config.deadline_s
        self.straggler_s = config.straggler_deadline
        self.pids = dict(pids)  # worker id -> pid, for the fault log
        self.continuation = continuation  # what a replacement does after this scenario
        self.stalled: set[int] = set()
        self.late: set[int] = set()
        self.no_majority = False
        self.patient = False  # this step had a spurious timeout: wait the full deadline
        self.current_step = -1
        self.attempts = 0
        self.respawned: set[int] = set()
        self.stall_reference: str | None = None
        self._late_self = False
        self._last_error = None
        self._lost = False  # this recovery removed a dead worker
        self._revoked = False

    STATE = ("stalled", "late", "no_majority", "patient", "current_step", "attempts", "respawned",
             "stall_reference")

    def state(self) -> dict:
        """What a replacement needs to take the same decisions as the survivors."""
        return {name: getattr(self, name) for name in self.STATE}

    def set_state(self, state: dict) -> None:
        for name in self.STATE:
            setattr(self, name, state[name])

    # ------------------------------------------------------------------ comms
    def make_comm(self, mpi_comm: MPI.Comm, worker_ids, data: bool = False) -> FaultComm:
        deadline = self.deadline_s
        if data and self.straggler_s > 0 and not self.patient:
            deadline = self.straggler_s  # a late peer surfaces as PeerLate after this long
        return FaultComm(mpi_comm, worker_ids, deadline, self.injector)

    def group(self, trainer) -> list[int]:
        if self.no_majority:
            return []
        return [w for w in trainer.comm.worker_ids if w not in self.stalled and w not in self.late]

    def rebuild(self, trainer) -> None:
        """A fresh data communicator for the current step group (collective over the control one)."""
        control = trainer.comm
        old = trainer.data_comm
        group = self.group(trainer)
        color = 0 if control.worker_id in group else MPI.UNDEFINED
        new = control.mpi.Split(color, control.rank)
        trainer.set_data_comm(None)
        if old is not None and old.mpi != control.mpi:
            ulfm.revoke(old.mpi)
            ulfm.free(old.mpi)
        if new != MPI.COMM_NULL:
            new.Set_errhandler(MPI.ERRORS_RETURN)
            ulfm.settle(new)
            trainer.set_data_comm(self.make_comm(new, group, data=True))

    # ------------------------------------------------------------------ the loop's hooks
    def begin(self, trainer, step: int) -> None:
        self.injector.enter(step)
        if step == self.current_step:
            return
        self.current_step, self.attempts = step, 0
        changed = bool(self.late) or self.patient
        self.late, self.patient = set(), False
        try:
            if (self.stalled or self.no_majority) and self._healed(trainer):
                self._resync(trainer, step)
                changed = True
            if changed:
                self.rebuild(trainer)
        except MPI.Exception as exc:  # a failure now is handled like one in the step itself
            raise translate(exc, trainer.comm.worker_ids) from None

    def role(self, trainer) -> str:
        me = trainer.comm.worker_id
        if self.no_majority or me in self.stalled:
            return "stall"
        return "late" if me in self.late else "contribute"

    def share_root(self, trainer) -> int | None:
        group = self.group(trainer)
        if not group or len(group) == trainer.comm.size:
            return None
        return trainer.comm.worker_ids.index(group[0])

    def commit(self, trainer, step: int, error) -> str:
        if self.no_majority:
            self._log_stalls(trainer, step, committed=False)
            return "skip"
        self._late_self = self.role(trainer) == "contribute" and self.injector.late()
        self._last_error = error
        ok = error is None and not self._late_self
        if not ok and trainer.data_comm is not None:
            ulfm.revoke(trainer.data_comm.mpi)  # release peers still blocked in this attempt
        if error is not None:
            # Peers whose data plane succeeded may wait in the evidence gather for this
            # rank: revoking the control communicator releases them (it is shrunk anew).
            ulfm.revoke(trainer.comm.mpi)
            self._revoked = True
        if ulfm.agree(trainer.comm.mpi, ok):
            self._log_delays(trainer, step)
            return "commit"
        self.attempts += 1
        if self.attempts >= MAX_ATTEMPTS:
            raise RunStuck(self._stuck_text(trainer, step, error))
        return "retry"

    def handle(self, trainer, step: int, error) -> None:
        trainer.comm.mark(step, "recovery")  # a death scheduled during recovery happens here
        self.recover(trainer, step, error)

    def recover(self, trainer, step: int, error, joined: bool = False) -> None:
        """Recovery rounds until one completes on every member (``joined``: a replacement
        entering right after the respawn stage of the first round)."""
        self._lost = joined  # a replacement joins right after the survivors lost a worker
        for round_no in range(MAX_ROUNDS):
            if not (joined and round_no == 0):
                try:
                    clean = not (ulfm.failed_locally(trainer.comm.mpi) or self._revoked)
                    dead = not ulfm.agree(trainer.comm.mpi, clean)
                except MPI.Exception:
                    dead = True
                if dead or round_no > 0:
                    self._shrink(trainer, step, error)
                    self._revoked = False
            reports, ok = None, True
            try:
                reports = trainer.comm.mpi.allgather(
                    (trainer.comm.worker_id, self._late_self,
                     self.injector.reachable_set(trainer.comm.worker_ids)))
            except MPI.Exception:
                ok = False
                ulfm.revoke(trainer.comm.mpi)
            if not ulfm.agree(trainer.comm.mpi, ok):
                continue
            self._plan(trainer, step, reports)
            try:
                self.rebuild(trainer)
            except MPI.Exception:
                ok = False
                ulfm.revoke(trainer.comm.mpi)
            if ulfm.agree(trainer.comm.mpi, ok):
                return
        raise RunStuck(self._stuck_text(trainer, step, error))

    # ------------------------------------------------------------------ recovery stages
    def _shrink(self, trainer, step: int, error) -> None:
        old = trainer.comm
        new = ulfm.shrink(old.mpi)
        ids = tuple(new.allgather(old.worker_id))
        gone = [w for w in old.worker_ids if w not in ids]
        self._lost = self._lost or bool(gone)
        if trainer.data_comm is not None and trainer.data_comm.mpi != old.mpi:
            ulfm.revoke(trainer.data_comm.mpi)
            ulfm.free(trainer.data_comm.mpi)
        trainer.data_comm = None
        trainer.strategy = None
        ulfm.revoke(old.mpi)
        ulfm.free(old.mpi)
        comm = self.make_comm(new, ids)
        trainer.comm = comm
        if comm.rank == 0:
            self._log_kills(trainer, step, gone, error)
        if gone and self.policy == "respawn":
            from .respawn import spawn_replacements

            spawn_replacements(self, trainer, step, gone)

    def fresh_control(self, trainer) -> None:
        """A usable control communicator for the members still alive (after a stuck run)."""
        new = ulfm.shrink(trainer.comm.mpi)
        ids = tuple(new.allgather(trainer.comm.worker_id))
        trainer.comm = self.make_comm(new, ids)

    def _plan(self, trainer, step: int, reports) -> None:
        members = trainer.comm.worker_ids
        late = {w for w, is_late, _ in reports if is_late}
        reach = {w: set(r) for w, _, r in reports}
        sides = _components(members, reach)
        majority = [side for side in sides if 2 * len(side) > len(members)]
        was_cut = bool(self.stalled) or self.no_majority
        if majority:
            self.stalled, self.no_majority = set(members) - majority[0], False
        else:
            self.stalled, self.no_majority = set(members), True
        self.late = late - self.stalled
        if not (self.late or self.stalled or self.no_majority or self._lost):
            self.patient = True  # nobody late, cut off or dead: the machine is just slow
        if (self.stalled or self.no_majority) and not was_cut:
            self.stall_reference = digest(trainer.params)
            if trainer.comm.rank == 0:
                what = ("no side holds a majority: nothing commits" if self.no_majority
                        else f"committing side {ranks_text(majority[0])}")
                self._fault(trainer, step, "", ranks_text(sorted(set(members) - (majority[0] if majority else set()))
                                                          or members), "partition",
                            f"sides {' | '.join(ranks_text(s) for s in sides)}; {what}")
        self._last_error = None

    def _healed(self, trainer) -> bool:
        members = trainer.comm.worker_ids
        views = trainer.comm.mpi.allgather(self.injector.reachable_set(members))
        return all(len(v) == len(members) for v in views)

    def _resync(self, trainer, step: int) -> None:
        """The cut-off workers take the committing side's parameters (worker 0 is on it)."""
        rejoining = sorted(self.stalled)
        params = trainer.comm.mpi.bcast(trainer.params if trainer.comm.rank == 0 else None, root=0)
        if trainer.comm.worker_id in self.stalled:
            trainer.params[...] = params
        if trainer.comm.rank == 0:
            for w in rejoining:
                self._fault(trainer, step, "before_compute", w, "resync",
                            f"healed: parameters from worker {trainer.comm.worker_id} "
                            f"(digest {digest(params)[:12]}); rejoins")
        self.stalled, self.no_majority, self.stall_reference = set(), False, None

    # ------------------------------------------------------------------ what the records see
    def expected_contributing(self, trainer, step: int) -> tuple[int, ...]:
        """From the fault log alone: alive, on the majority side, on time."""
        s = self.schedule
        gone = s.killed_by(step) if self.policy == "shrink" else set()
        live = set(range(self.world_size)) - gone
        cut = set()
        p = s.partition_at(step)
        if p is not None:
            sides = [set(side) & live for side in p.sides]
            majority = [side for side in sides if 2 * len(side) > len(live)]
            cut = live - majority[0] if majority else live
        late = set()
        if self.straggler_s > 0:
            late = {d.rank for d in s.delays if step in d.steps and d.seconds >= self.straggler_s}
        return tuple(sorted(live - cut - late))

    def checked_members(self, trainer) -> tuple[int, ...]:
        return tuple(w for w in trainer.comm.worker_ids if w not in self.stalled)

    def excluded(self, trainer, step: int) -> dict[int, str]:
        out = {w: "dead" for w in range(self.world_size) if w not in trainer.comm.worker_ids}
        out.update({w: "unreachable" for w in self.stalled})
        out.update({w: "late" for w in self.late})
        return out

    def stall_problem(self, trainer, step: int, digests: dict[int, str]) -> str | None:
        self._log_stalls(trainer, step, committed=True, digests=digests)
        moved = [w for w, d in digests.items() if d is not None and d != self.stall_reference]
        if moved:
            return f"stalled worker(s) {ranks_text(moved)} changed their parameters at step {step}"
        return None

    # ------------------------------------------------------------------ the fault log
    def _fault(self, trainer, step, phase, rank, kind, detail) -> None:
        trainer.records.faults.write({"scenario": self.config.scenario, "strategy": self.config.strategy,
                                      "step": step, "phase": phase, "rank": rank, "kind": kind,
                                      "detail": detail})

    def _log_kills(self, trainer, step: int, gone, error) -> None:
        # The record holds only what the seed decides; the process id and the error
        # class the survivors happened to see first differ between runs, so they go
        # to the job's log instead.
        scheduled = {k.rank: k for k in self.schedule.kills}
        for w in gone:
            k = scheduled.get(w)
            phase = k.phase if k else "unscheduled"
            extra = f" after {k.messages} message(s)" if k and k.phase == "mid_reduction" else ""
            self._fault(trainer, k.step if k else step, phase, w, "kill",
                        f"SIGKILL signal 9{extra}; shrunk at step {step}")
            if trainer.comm.rank == 0:
                print(f"fault: worker {w} (pid {self.pids.get(w, '?')}) killed at step {step}; "
                      f"survivors saw: {error}", flush=True)

    def _log_delays(self, trainer, step: int) -> None:
        if trainer.comm.rank != 0:
            return
        for d in self.schedule.delays:
            if step in d.steps and d.rank in trainer.comm.worker_ids:
                fate = "dropped from this step (late)" if d.rank in self.late else "waited for"
                self._fault(trainer, step, d.where, d.rank, "delay", f"{d.seconds:g} s before {d.where}; {fate}")

    def _log_stalls(self, trainer, step: int, committed: bool, digests=None) -> None:
        if not committed:
            digests = trainer.comm.mpi.gather(digest(trainer.params), root=0)
            if trainer.comm.rank != 0:
                return
            digests = dict(zip(trainer.comm.worker_ids, digests))
        if trainer.comm.rank != 0:
            return
        why = "no majority: nothing committed" if not committed else "cut off: nothing applied"
        for w, d in sorted((digests or {}).items()):
            self._fault(trainer, step, "", w, "stall", f"{why}; params digest {str(d)[:12]}")

    def _stuck_text(self, trainer, step: int, error) -> str:
        return (f"step {step} could not commit after {self.attempts} attempt(s) on members "
                f"{ranks_text(trainer.comm.worker_ids)}: {error}"
                + (f" (peers {ranks_text(error.peers)})" if getattr(error, "peers", None) else ""))


def _components(members, reach: dict[int, set[int]]) -> list[set[int]]:
    """Sides of the membership: groups of workers that reach each other both ways."""
    left = list(members)
    sides = []
    while left:
        first = left.pop(0)
        side = {first} | {w for w in left if w in reach.get(first, ()) and first in reach.get(w, ())}
        left = [w for w in left if w not in side]
        sides.append(side)
    return sides
