"""What the survivors do about faults: the step group, the commit decision, ULFM recovery.

Each step runs on a *data* communicator (the step group: members that may
contribute) while agreement and recovery use the *control* communicator of
the whole membership. A step's attempt ends with one ULFM agreement over the
control communicator: it commits only if every member's data plane succeeded
and nobody was late beyond the straggler deadline, so all members take the
same decision and a dead, cut-off or late worker's partial contribution never
reaches an applied update (the loop rolls back). A straggler the on-time
workers drop without waiting for it is the exception: they agree among
themselves (:mod:`.straggler`) and hand it the outcome when it arrives.

After a failed attempt, :meth:`FaultRecovery.recover` repeats until the
membership is clean: agree whether anyone died; if so shrink (and, under
``--recovery respawn``, spawn replacements that take the dead workers'
shards); gather each member's report (late? which peers can it reach?);
derive the next attempt's step group: the strict-majority side of a
partition (the others stall, keep their parameters and consume nothing),
minus the late workers (dropped from this step only); survivors of a shrink
without a quorum stall for good (:mod:`.quorum`). Every stage that could be
interrupted by a further failure is followed by an agreement, so a death
during recovery starts another round instead of splitting the survivors.

No role belongs to a fixed worker: records are written, parameters handed
out and healed workers re-synced by members chosen from the current
membership, so any worker, worker 0 included, may die or be cut off.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mpi4py import MPI

from mpibench.sync.comm import translate
from mpibench.engine.recovery_hooks import Recovery
from mpibench.engine.worker import digest

from . import quorum, sides, straggler, ulfm
from .fault_log import FaultLog
from .schedule import Schedule
from .wrapper import FaultComm, Injector

MAX_ROUNDS = 8  # recovery rounds for one failed attempt
MAX_ATTEMPTS = 6  # attempts of one step before the run is declared stuck


class RunStuck(RuntimeError):
    """The run cannot make progress; the message names the step and the ranks."""


@dataclass
class RecoveryState:
    """What every member holds alike, and a replacement is handed to take the same decisions."""

    stalled: set = field(default_factory=set)
    late: set = field(default_factory=set)
    no_majority: bool = False
    patient: bool = False  # this step had a spurious timeout: wait the full deadline
    current_step: int = -1
    attempts: int = 0
    respawned: set = field(default_factory=set)


class FaultRecovery(Recovery):
    def __init__(self, config, schedule: Schedule, injector: Injector, world_size: int,
                 pids: dict[int, int], continuation=None, state: RecoveryState | None = None):
        self.config, self.schedule, self.injector = config, schedule, injector
        self.world_size = world_size
        self.policy = config.recovery
        self.deadline_s = config.deadline_s
        self.straggler_s = config.straggler_deadline
        self.log = FaultLog(config, schedule, pids)
        self.continuation = continuation  # the job's continuation, carried to replacements
        self.state = state or RecoveryState()
        self.drop = straggler.DropProtocol(self)
        injector.wake = self.drop.outcome_waiting
        self._late_self = False
        self._lost = False  # this recovery removed a dead worker
        self._revoked = False
        self._stall_digests: dict[int, str] = {}

    @staticmethod
    def params_digest(trainer) -> str:
        return digest(trainer.params)

    # ------------------------------------------------------------------ comms
    def make_comm(self, mpi_comm: MPI.Comm, worker_ids, data: bool = False) -> FaultComm:
        # at a step with a scheduled straggler, a late peer surfaces as PeerLate after straggler_s
        deadline = self.drop.data_deadline_s(self.state.current_step) if data else self.deadline_s
        return FaultComm(mpi_comm, worker_ids, deadline, self.injector, on_reduce=self.drop.announce)

    def group(self, trainer) -> list[int]:
        s = self.state
        if s.no_majority:
            return []
        return [w for w in trainer.comm.worker_ids if w not in s.stalled and w not in s.late]

    def rebuild(self, trainer) -> None:
        """A fresh data communicator for the current step group (collective over the control one)."""
        control = trainer.comm
        group = self.group(trainer)
        color = 0 if control.worker_id in group else MPI.UNDEFINED
        new = control.mpi.Split(color, control.rank)
        self.retire_data(trainer)
        if new != MPI.COMM_NULL:
            new.Set_errhandler(MPI.ERRORS_RETURN)
            ulfm.settle(new)
            trainer.set_data_comm(self.make_comm(new, group, data=True))

    def retire_data(self, trainer) -> None:
        old = trainer.data_comm
        trainer.set_data_comm(None)
        if old is not None and old.mpi != trainer.comm.mpi:
            ulfm.revoke(old.mpi)
            ulfm.free(old.mpi)

    # ------------------------------------------------------------------ the loop's hooks
    def begin(self, trainer, step: int) -> None:
        self.injector.enter(step)
        self.drop.enter(trainer, step)
        s = self.state
        if step == s.current_step:
            return
        s.current_step, s.attempts = step, 0
        changed = bool(s.late) or s.patient
        s.late, s.patient = set(), False
        try:
            if (s.stalled or s.no_majority) and self._healed(trainer):
                self._resync(trainer, step)
                changed = True
            if changed:
                self.rebuild(trainer)
        except MPI.Exception as exc:  # a failure now is handled like one in the step itself
            raise translate(exc, trainer.comm.worker_ids) from None

    def role(self, trainer) -> str:
        me, s = trainer.comm.worker_id, self.state
        if s.no_majority or me in s.stalled:
            return "stall"
        return "late" if me in s.late else "contribute"

    def share(self, trainer, role: str, reduction, loss_rows, effective_batch):
        """The step group's result for members outside it: over the control plane to
        stalled members, from the drop protocol to a dropped straggler."""
        if self.drop.active:
            return self.drop.share(trainer, role, reduction, loss_rows, effective_batch)
        group = self.group(trainer)
        if not group or len(group) == trainer.comm.size:
            return reduction, loss_rows, effective_batch
        root = trainer.comm.worker_ids.index(group[0])
        mine = (trainer.params, reduction, loss_rows, effective_batch) if trainer.comm.rank == root else None
        try:
            params, reduction, loss_rows, effective_batch = trainer.comm.mpi.bcast(mine, root=root)
        except MPI.Exception as exc:
            raise translate(exc, [group[0]]) from None
        if role == "late":  # its batch is used up, its update is the committed one
            trainer.params[...] = params
        return reduction, loss_rows, effective_batch

    def commit(self, trainer, step: int, error) -> str:
        s = self.state
        if s.no_majority:
            self._gather_stall_digests(trainer)
            self.log.stalls(trainer, step, False, self._stall_digests)
            return "skip"
        if self.drop.active or self.drop.wanted(error):
            decision = self.drop.commit(trainer, step, error)
            if decision is not None:
                return self._decided(trainer, step, decision, error)
        self._late_self = self.role(trainer) == "contribute" and self.injector.late()
        ok = error is None and not self._late_self
        if not ok and trainer.data_comm is not None:
            ulfm.revoke(trainer.data_comm.mpi)  # release peers still blocked in this attempt
        if error is not None:
            # Peers whose data plane succeeded may wait in a control-plane call for this
            # rank: revoking the control communicator releases them (it is shrunk anew).
            ulfm.revoke(trainer.comm.mpi)
            self._revoked = True
        if s.stalled:  # every member gathers, or a revoke from a failed one releases it
            ok = self._gather_stall_digests(trainer) and ok
        return self._decided(trainer, step, "commit" if ulfm.agree(trainer.comm.mpi, ok) else "retry", error)

    def _decided(self, trainer, step: int, decision: str, error) -> str:
        s = self.state
        if decision == "commit":
            self.log.delays(trainer, step, s.late)
            self.log.outside_kinds(trainer, step)
            if s.stalled:
                self.log.stalls(trainer, step, True, self._stall_digests)
            return decision
        s.attempts += 1
        if s.attempts >= MAX_ATTEMPTS:
            raise RunStuck(self._stuck_text(trainer, step, error))
        return decision

    def handle(self, trainer, step: int, error) -> None:
        trainer.comm.mark(step, "recovery")  # a death scheduled during recovery happens here
        if self.drop.settled():
            return  # the on-time workers agreed among themselves: nothing to recover
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
        trainer.comm = self.make_comm(new, ids)
        self.log.kills(trainer, step, gone, error)
        if gone and not quorum.may_go_on(old.worker_ids, ids, quorum.suspicions_possible()):
            self.log.no_quorum(trainer, step, old.worker_ids, ids)
            quorum.stall(step, ids, self.deadline_s)
        if gone and self.policy == "respawn":
            from .respawn import spawn_replacements

            spawn_replacements(self, trainer, step, gone)

    def fresh_control(self, trainer) -> None:
        """A usable control communicator for the members still alive (after a stuck run)."""
        new = ulfm.shrink(trainer.comm.mpi)
        ids = tuple(new.allgather(trainer.comm.worker_id))
        trainer.comm = self.make_comm(new, ids)

    def _plan(self, trainer, step: int, reports) -> None:
        sides.plan(self, trainer, step, reports)

    def _healed(self, trainer) -> bool:
        return sides.healed(self, trainer)

    def hand_over(self, resume):
        """What the replacements are handed (a respawn.Resume); a subclass handed in through
        mpibench.job.parts.RunParts may override it."""
        return resume

    def _resync(self, trainer, step: int) -> None:
        sides.resync(self, trainer, step)

    def _gather_stall_digests(self, trainer) -> bool:
        """Every stalled member's parameter digest, on the writer, for the fault log."""
        try:
            self._stall_digests = sides.stall_digests(self, trainer)
        except MPI.Exception:
            ulfm.revoke(trainer.comm.mpi)
            self._revoked = True
            return False
        return True

    # ------------------------------------------------------------------ what the records see
    def excluded(self, trainer, step: int) -> dict[int, str]:
        out = {w: "dead" for w in range(self.world_size) if w not in trainer.comm.worker_ids}
        out.update({w: "unreachable" for w in self.state.stalled})
        return out | {w: "late" for w in self.state.late}

    def _stuck_text(self, trainer, step: int, error) -> str:
        members, peers = " ".join(map(str, trainer.comm.worker_ids)), getattr(error, "peers", None)
        return (f"step {step} could not commit after {self.state.attempts} attempt(s) on members {members}: {error}"
                + (f" (peers {' '.join(map(str, peers))})" if peers else ""))
