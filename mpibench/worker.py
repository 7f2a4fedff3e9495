"""The worker loop: compute, synchronise, record, check; the same for every strategy.

Each rank is one worker that owns one shard. A step computes the local
gradient sum on the next batch, hands it to the sync strategy (which applies
the averaged update in place), then gathers the step's evidence on the
membership's first rank, where the invariant checker judges it against the
single-process reference. The loop never knows which strategy runs; faults
reach it only as :class:`~mpibench.comm.CommError` from the communicator,
and what to do about them is the job of a :class:`Recovery`.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np

from mpi4py import MPI

from .aggregate import moments_from_totals
from .comm import Comm, CommError, translate
from .config import RunConfig, replay_command
from .data import Cursor, Dataset, ShardWalker
from .invariants import Batch, Checker, StepEvidence, Verdict
from .model import MLP, Shapes, init_params
from .records import RunRecords, ranks_text
from .sync import SyncStrategy, make_strategy
from .watchdog import StepWatchdog, budget_for


@dataclass
class Summary:
    """How a run went, agreed on by every rank at the end."""

    steps: int = 0
    checks: int = 0
    violations: int = 0
    unknown: int = 0
    first_violation: tuple[int, str, str] | None = None  # (step, invariant, detail)
    batch_min: int | None = None
    batch_max: int | None = None
    error: str | None = None  # a run that could not go on

    def note_batch(self, effective_batch: int) -> None:
        self.batch_min = effective_batch if self.batch_min is None else min(self.batch_min, effective_batch)
        self.batch_max = effective_batch if self.batch_max is None else max(self.batch_max, effective_batch)


@dataclass
class StepOutcome:
    """What one committed step produced, before it is recorded."""

    step: int
    reduction: object
    batch: np.ndarray
    cursor_before: Cursor
    loss_rows: np.ndarray
    excluded: dict[int, str] = field(default_factory=dict)  # worker id -> reason
    consumed: bool = True  # this worker's batch was used up (its cursor moved on)
    effective_batch: int = 0
    parts: list | None = None  # every member's evidence, on the checking rank


def digest(params: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(params).tobytes(), digest_size=16).hexdigest()


class Recovery:
    """What the loop does around a step and when its communication fails. Default: give up.

    The fault-aware policy (``mpibench.faults.recovery``) overrides these hooks:
    ``begin`` may change the step group (partitions, dropped stragglers),
    ``role`` says whether this worker contributes, is late (its batch is used
    up but left out) or stalls (nothing consumed, nothing applied),
    ``share`` hands the step group's result to members outside it,
    ``commit`` turns the attempt into one decision shared by every member
    (``"commit"``, ``"skip"`` when nobody may commit, ``"retry"``), and
    ``handle`` recovers before a retry.
    """

    def begin(self, trainer: "Trainer", step: int) -> None:
        pass

    def role(self, trainer: "Trainer") -> str:
        return "contribute"

    def share(self, trainer: "Trainer", role: str, reduction, loss_rows, effective_batch):
        """The step's (reduction, loss rows, effective batch) on this worker, whatever its role.

        A late worker also takes the committed parameters; a stalled one keeps its own.
        """
        return reduction, loss_rows, effective_batch

    def commit(self, trainer: "Trainer", step: int, error: CommError | None) -> str:
        if error is not None:
            raise error
        return "commit"

    def excluded(self, trainer: "Trainer", step: int) -> dict[int, str]:
        return {}

    def evidence_gathered(self, trainer: "Trainer") -> bool:
        """Whether every member meets in this attempt's control-plane evidence gather
        (not when the step commits without a dropped straggler)."""
        return True

    def handle(self, trainer: "Trainer", step: int, error: CommError | None) -> None:
        raise error if error is not None else RuntimeError(f"step {step} failed")


class PhaseBackend:
    """The strategy's back-end, telling the communicator when the update is about to be applied.

    Every strategy applies the reduced update through ``apply_update``, so its
    first call in a step is the moment "after the reduction, before apply".
    """

    def __init__(self, backend, on_apply):
        self._backend, self._on_apply = backend, on_apply

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def apply_update(self, *args, **kwargs):
        self._on_apply()
        return self._backend.apply_update(*args, **kwargs)


class Trainer:
    """One worker's state and the step loop."""

    def __init__(self, config: RunConfig, comm: Comm, backend, dataset: Dataset,
                 shards: list[np.ndarray], records: RunRecords, world_size: int,
                 recovery: Recovery | None = None, shard_id: int | None = None,
                 params: np.ndarray | None = None, cursor: Cursor | None = None,
                 strategy_factory=make_strategy):
        self.config, self.comm, self.backend = config, comm, backend
        self.dataset, self.shards, self.records = dataset, shards, records
        self.data_comm = comm  # the step group the strategy talks over (all members by default)
        self.world_size = world_size
        self.step_no = -1
        self.recovery = recovery or Recovery()
        self.strategy_factory = strategy_factory
        self.shapes = Shapes(config.features, config.hidden, config.classes)
        self.model = MLP(self.shapes)
        self.params = init_params(config.seed, self.shapes) if params is None else params
        self.params_before = np.empty_like(self.params)
        self.shard_id = comm.worker_id if shard_id is None else shard_id
        self.walker = ShardWalker(config.seed, self.shard_id, shards[self.shard_id], config.batch_size)
        self.cursor = cursor or Cursor()
        self.known_cursors: dict[int, Cursor] = {}  # on the checking rank: every worker's cursor
        self.strategy: SyncStrategy | None = self._strategy()
        self.checker = self._checker() if comm.rank == 0 else None
        self.summary = Summary()
        self._last_check_step = -1
        self._last_gradient = None  # (indices, params, grad_sum, count, losses) last computed

    def _strategy(self) -> SyncStrategy:
        options = {"bucket_bytes": self.config.bucket_bytes, "ps_shards": self.config.ps_shards,
                   "straggler_deadline": self.config.straggler_deadline}
        backend = PhaseBackend(self.backend, lambda: self.data_comm.mark(self.step_no, "after_reduce"))
        return self.strategy_factory(self.config.strategy, self.data_comm, backend,
                                     self.shapes.n_params, options)

    def _checker(self) -> Checker:
        from .invariants import ModelSpec

        return Checker(self.dataset.features, self.dataset.labels, self.shards,
                       self.config.batch_size, ModelSpec(self.config.hidden, self.config.classes),
                       complete_history=self.config.check_every == 1)

    def replace_comm(self, comm: Comm, data_comm: Comm | None = None) -> None:
        """Continue on a new membership (after a shrink or a respawn) and step group."""
        self.comm = comm
        self.set_data_comm(comm if data_comm is None else data_comm)
        if comm.rank == 0 and self.checker is None:
            self.checker = self._checker()

    def set_data_comm(self, data_comm: Comm | None) -> None:
        """Run the strategy over ``data_comm`` (None: this worker is outside the step group)."""
        if self.strategy is not None:
            self.strategy.close()
        self.data_comm = data_comm
        self.strategy = self._strategy() if data_comm is not None else None

    # ------------------------------------------------------------------ the loop
    def run(self, first_step: int = 0) -> Summary:
        watchdog = StepWatchdog(budget_for(self.config.deadline_s))
        try:
            for step in range(first_step, self.config.steps):
                watchdog.arm(step, self.comm.worker_ids)
                committed = self._attempt(step)
                if committed is not None:
                    self._record(*committed)
        finally:
            watchdog.disarm()
        return self.summary

    def _attempt(self, step: int):
        """Run ``step`` until it commits (or nobody may commit it), rolling back on a failure."""
        self.step_no = step
        while True:
            result, error = None, None
            try:
                # Recovery may re-sync healed workers here: the rollback point is taken
                # after it, or a retry would roll them back to their stale parameters.
                self.recovery.begin(self, step)
            except CommError as exc:
                error = exc
            cursor = self.cursor
            np.copyto(self.params_before, self.params)
            if error is None:
                try:
                    result = self._step(step, cursor)
                except CommError as exc:
                    error = exc
            decision = self.recovery.commit(self, step, error)
            if decision == "commit":
                return result
            np.copyto(self.params, self.params_before)
            self.cursor = cursor
            if decision == "skip":
                return None
            self.recovery.handle(self, step, error)

    def _gradient(self, indices: np.ndarray):
        """The local gradient sum on ``indices``; a redo of the same batch from the same
        parameters (a retry after the step group changed) reuses the last one."""
        last = self._last_gradient
        if last is not None and np.array_equal(last[0], indices) and np.array_equal(last[1], self.params):
            np.copyto(self.model.grad_sum, last[2])  # the strategy may have reduced in place
            return self.model.grad_sum, last[3], last[4]
        grad_sum, count, losses = self.model.loss_and_grad_sum(
            self.params, self.dataset.features[indices], self.dataset.labels[indices])
        self._last_gradient = (indices.copy(), self.params.copy(), grad_sum.copy(), count, losses)
        return grad_sum, count, losses

    def _step(self, step: int, cursor: Cursor):
        start = time.perf_counter()
        role = self.recovery.role(self)
        self.comm.mark(step, "before_compute")
        excluded = self.recovery.excluded(self, step)
        if role == "stall":  # cut off from the committing side: nothing consumed, nothing applied
            indices, after, consumed = self.walker.shard[:0], cursor, False
        else:
            (indices, after), consumed = self.walker.batch(cursor), True
        reduction, loss_rows, effective_batch, sync_s = None, None, 0, 0.0
        if role == "contribute":
            grad_sum, count, losses = self._gradient(indices)
            self.comm.mark(step, "reduce")
            sync_start = time.perf_counter()
            reduction = self.strategy.synchronize(self.params, grad_sum, count, self.config.lr)
            sync_s = time.perf_counter() - sync_start
            self.comm.mark(step, "after_apply")
            local_row = np.array([count, losses.sum(dtype=np.float64),
                                  np.square(losses, dtype=np.float64).sum()], dtype=np.float64)
            loss_rows = self.strategy.pool_loss(local_row, reduction.contributing)
            effective_batch = self.strategy.total_count()
        reduction, loss_rows, effective_batch = self.recovery.share(self, role, reduction, loss_rows,
                                                                    effective_batch)
        self.cursor = after
        outcome = StepOutcome(step, reduction, indices, cursor, loss_rows, excluded, consumed,
                              effective_batch)
        # Gathered before the commit decision: a fast rank that dies early in the next step
        # cannot break it (nobody leaves the commit agreement before everyone has gathered).
        outcome.parts = self._collect(outcome) if self.recovery.evidence_gathered(self) else None
        return outcome, (time.perf_counter() - start, sync_s)

    def _collect(self, outcome: StepOutcome):
        """Every member's part of the step, on rank 0 (control plane)."""
        checked = outcome.step % self.config.check_every == 0
        mine = (self.comm.worker_id, self.shard_id, outcome.batch, outcome.cursor_before, outcome.consumed,
                digest(self.params) if checked or not outcome.consumed else None, self.cursor)
        try:
            return self.comm.mpi.gather(mine, root=0)
        except MPI.Exception as exc:
            raise translate(exc, self.comm.worker_ids) from None

    # ------------------------------------------------------------------ records and checks
    def _record(self, outcome: StepOutcome, times) -> None:
        step_s, sync_s = times
        reduction = outcome.reduction
        effective_batch = outcome.effective_batch
        rows = outcome.loss_rows
        moments = moments_from_totals(*rows.sum(axis=0)) if rows is not None and len(rows) else None
        loss_mean, loss_var = moments if moments is not None else (None, None)
        check_start = time.perf_counter()
        if self.comm.rank == 0 and self.checker is None:  # worker 0 died: the next first rank checks
            self.checker = self._checker()
        evidence, shape = self._gather_evidence(outcome, effective_batch, loss_mean, loss_var)
        verdicts = self.checker.check(evidence) if evidence is not None else []
        if self.comm.rank == 0 and evidence is None:  # a step not judged here: no chain to check across
            self.checker.last_commit = None
        if self.comm.rank == 0 and shape.stall_problem:
            verdicts = [Verdict("membership", False, shape.stall_problem) if v.invariant == "membership"
                        else v for v in verdicts]
        check_s = time.perf_counter() - check_start
        self.summary.steps += 1
        self.summary.note_batch(effective_batch)
        if self.comm.rank != 0:
            return
        c = self.config
        self.records.steps.write({
            "scenario": c.scenario, "strategy": c.strategy, "recovery": c.recovery,
            "step": outcome.step, "epoch": shape.min_epoch,
            "members": ranks_text(self.comm.worker_ids),
            "contributing": ranks_text(reduction.contributing),
            "excluded": " ".join(f"{w}:{why}" for w, why in sorted(outcome.excluded.items())),
            "effective_batch": effective_batch,
            "epoch_ends": ranks_text(shape.epoch_ends),
            "loss_mean": loss_mean, "loss_var": loss_var,
            "step_time_s": step_s, "sync_time_s": sync_s, "check_time_s": check_s})
        for verdict in verdicts:
            self._note_verdict(outcome.step, verdict)

    def _note_verdict(self, step: int, verdict: Verdict) -> None:
        c = self.config
        self.records.invariants.write({"scenario": c.scenario, "strategy": c.strategy, "step": step,
                                       "invariant": verdict.invariant,
                                       "passed": "unknown" if verdict.passed is None else verdict.passed,
                                       "detail": verdict.detail})
        self.summary.checks += 1
        if verdict.passed is None:
            self.summary.unknown += 1
        if verdict.passed is not True:
            self.summary.violations += 1
            if self.summary.first_violation is None:
                self.summary.first_violation = (step, verdict.invariant, verdict.detail)

    def _gather_evidence(self, outcome: StepOutcome, effective_batch, loss_mean, loss_var):
        """Turn the collected parts into the checker's evidence (rank 0)."""
        checked = outcome.step % self.config.check_every == 0
        parts = outcome.parts
        if self.comm.rank != 0:
            return None, None
        if parts is None:
            return None, StepShape(None, [])
        if not outcome.consumed:  # this rank is cut off: its replica is not the committed one
            checked = False
        batches = {w: Batch(w, shard, idx, cur.epoch, cur.position)
                   for w, shard, idx, cur, used, _, _ in parts if used}
        self.known_cursors.update({w: after for w, _, _, _, _, _, after in parts})
        contributing = tuple(outcome.reduction.contributing)
        shape = StepShape(
            min_epoch=min((b.epoch for w, b in batches.items() if w in contributing), default=None),
            epoch_ends=[w for w, b in batches.items()
                        if len(b.indices) and b.position + len(b.indices) == len(self.shards[b.shard])],
            stall_problem=None)
        if not checked:
            return None, shape
        evidence = StepEvidence(
            step=outcome.step, members=tuple(w for w, _, _, _, used, _, _ in parts if used),
            contributing=contributing,
            expected_contributing=tuple(w for w, _, _, _, used, _, _ in parts
                                        if used and w not in outcome.excluded),
            batches=batches, params_before=self.params_before, params_after=self.params,
            digests={w: d for w, _, _, _, _, d, _ in parts}, pieces=list(outcome.reduction.pieces),
            total_length=outcome.reduction.total_length, effective_batch=effective_batch,
            loss_mean=loss_mean, loss_var=loss_var, lr=self.config.lr)
        return evidence, shape


@dataclass
class StepShape:
    """Per-step facts for the records that do not need a full check."""

    min_epoch: int | None
    epoch_ends: list[int]
    stall_problem: str | None = None


def violation_message(summary: Summary, config: RunConfig, ranks: int) -> str:
    step, invariant, detail = summary.first_violation
    return (f"violation: invariant '{invariant}' failed at step {step} ({detail}); "
            f"replay: {replay_command(config, ranks)}")
