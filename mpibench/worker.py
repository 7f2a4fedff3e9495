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

from .comm import Comm, CommError
from .config import RunConfig, replay_command
from .data import Cursor, Dataset, ShardWalker
from .invariants import Batch, Checker, StepEvidence, Verdict
from .model import MLP, Shapes, init_params
from .records import RunRecords, ranks_text
from .sync import SyncStrategy, make_strategy


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


def digest(params: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(params).tobytes(), digest_size=16).hexdigest()


class Recovery:
    """What the loop does when a step's communication fails. Default: give up."""

    def expected_contributing(self, trainer: "Trainer", step: int) -> tuple[int, ...]:
        return trainer.comm.worker_ids

    def excluded(self, trainer: "Trainer", step: int) -> dict[int, str]:
        return {}

    def handle(self, trainer: "Trainer", step: int, error: CommError) -> None:
        raise error


class Trainer:
    """One worker's state and the step loop."""

    def __init__(self, config: RunConfig, comm: Comm, backend, dataset: Dataset,
                 shards: list[np.ndarray], records: RunRecords, world_size: int,
                 recovery: Recovery | None = None, shard_id: int | None = None,
                 params: np.ndarray | None = None, cursor: Cursor | None = None,
                 strategy_factory=make_strategy):
        self.config, self.comm, self.backend = config, comm, backend
        self.dataset, self.shards, self.records = dataset, shards, records
        self.world_size = world_size
        self.recovery = recovery or Recovery()
        self.strategy_factory = strategy_factory
        self.shapes = Shapes(config.features, config.hidden, config.classes)
        self.model = MLP(self.shapes)
        self.params = init_params(config.seed, self.shapes) if params is None else params
        self.params_before = np.empty_like(self.params)
        self.shard_id = comm.worker_id if shard_id is None else shard_id
        self.walker = ShardWalker(config.seed, self.shard_id, shards[self.shard_id], config.batch_size)
        self.cursor = cursor or Cursor()
        self.strategy: SyncStrategy = self._strategy()
        self.checker = self._checker() if comm.rank == 0 else None
        self.summary = Summary()
        self._last_check_step = -1

    def _strategy(self) -> SyncStrategy:
        options = {"bucket_bytes": self.config.bucket_bytes, "ps_shards": self.config.ps_shards,
                   "straggler_deadline": self.config.straggler_deadline}
        return self.strategy_factory(self.config.strategy, self.comm, self.backend,
                                     self.shapes.n_params, options)

    def _checker(self) -> Checker:
        from .invariants import ModelSpec

        return Checker(self.dataset.features, self.dataset.labels, self.shards,
                       self.config.batch_size, ModelSpec(self.config.hidden, self.config.classes),
                       complete_history=self.config.check_every == 1)

    def replace_comm(self, comm: Comm) -> None:
        """Continue on a new communicator (after a shrink or a respawn)."""
        self.strategy.close()
        self.comm = comm
        self.strategy = self._strategy()
        if comm.rank == 0 and self.checker is None:
            self.checker = self._checker()

    # ------------------------------------------------------------------ the loop
    def run(self, first_step: int = 0) -> Summary:
        for step in range(first_step, self.config.steps):
            outcome, times = self._attempt(step)
            self._record(outcome, times)
        return self.summary

    def _attempt(self, step: int):
        """Run ``step`` until it commits, rolling back and recovering on a failure."""
        while True:
            cursor = self.cursor
            np.copyto(self.params_before, self.params)
            try:
                return self._step(step, cursor)
            except CommError as error:
                np.copyto(self.params, self.params_before)
                self.cursor = cursor
                self.recovery.handle(self, step, error)

    def _step(self, step: int, cursor: Cursor):
        start = time.perf_counter()
        self.comm.mark(step, "before_compute")
        indices, after = self.walker.batch(cursor)
        grad_sum, count, losses = self.model.loss_and_grad_sum(
            self.params, self.dataset.features[indices], self.dataset.labels[indices])
        self.comm.mark(step, "reduce")
        sync_start = time.perf_counter()
        reduction = self.strategy.synchronize(self.params, grad_sum, count, self.config.lr)
        sync_s = time.perf_counter() - sync_start
        self.comm.mark(step, "after_apply")
        local_row = np.array([count, losses.sum(dtype=np.float64),
                              np.square(losses, dtype=np.float64).sum()], dtype=np.float64)
        loss_rows = self.strategy.pool_loss(local_row, reduction.contributing)
        self.cursor = after
        outcome = StepOutcome(step, reduction, indices, cursor, loss_rows,
                              self.recovery.excluded(self, step))
        return outcome, (time.perf_counter() - start, sync_s)

    # ------------------------------------------------------------------ records and checks
    def _record(self, outcome: StepOutcome, times) -> None:
        step_s, sync_s = times
        reduction = outcome.reduction
        effective_batch = self.strategy.total_count()
        moments = self.strategy.loss_moments(outcome.loss_rows)
        loss_mean, loss_var = moments if moments is not None else (None, None)
        check_start = time.perf_counter()
        evidence, shape = self._gather_evidence(outcome, effective_batch, loss_mean, loss_var)
        verdicts = self.checker.check(evidence) if evidence is not None else []
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
        """Collect every member's part of the step on rank 0 (control plane)."""
        checked = outcome.step % self.config.check_every == 0
        mine = (self.comm.worker_id, self.shard_id, outcome.batch, outcome.cursor_before,
                outcome.consumed, digest(self.params) if checked else None)
        parts = self.comm.mpi.gather(mine, root=0)
        if self.comm.rank != 0:
            return None, None
        batches = {w: Batch(w, shard, idx, cur.epoch, cur.position) for w, shard, idx, cur, used, _ in parts
                   if used}
        contributing = tuple(outcome.reduction.contributing)
        shape = StepShape(
            min_epoch=min((b.epoch for w, b in batches.items() if w in contributing), default=None),
            epoch_ends=[w for w, b in batches.items()
                        if len(b.indices) and b.position + len(b.indices) == len(self.shards[b.shard])])
        if not checked:
            return None, shape
        evidence = StepEvidence(
            step=outcome.step, members=self.comm.worker_ids, contributing=contributing,
            expected_contributing=tuple(self.recovery.expected_contributing(self, outcome.step)),
            batches=batches, params_before=self.params_before, params_after=self.params,
            digests={w: d for w, _, _, _, _, d in parts}, pieces=list(outcome.reduction.pieces),
            total_length=outcome.reduction.total_length, effective_batch=effective_batch,
            loss_mean=loss_mean, loss_var=loss_var, lr=self.config.lr)
        return evidence, shape


@dataclass
class StepShape:
    """Per-step facts for the records that do not need a full check."""

    min_epoch: int | None
    epoch_ends: list[int]


def violation_message(summary: Summary, config: RunConfig, ranks: int) -> str:
    step, invariant, detail = summary.first_violation
    return (f"violation: invariant '{invariant}' failed at step {step} ({detail}); "
            f"replay: {replay_command(config, ranks)}")
