"""The worker loop: compute, synchronise, record; the same for every strategy.

Each rank is one worker that owns one shard. A step computes the local
gradient sum on the next batch, hands it to the sync strategy (which applies
the averaged update in place; with ``--overlap`` layer by layer as the backward
pass completes them, :mod:`mpibench.sync.overlap`) and appends what it did to this worker's
history (:mod:`mpibench.engine.history`) before the commit decision. Nothing here
judges a step: the checker reads the histories afterwards. The loop never
knows which strategy runs; faults reach it only as
:class:`~mpibench.sync.comm.CommError` from the communicator, and what to do about
them is the job of a :class:`Recovery`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from mpibench.base.config import RunConfig
from mpibench.base.records import RunRecords
from mpibench.kernels.counts import transfer_counts
from mpibench.sync import SyncStrategy, make_strategy
from mpibench.sync.comm import Comm, CommError
from mpibench.sync.overlap import StepSync
from mpibench.sync.registry import options_of

from .data import Cursor, Dataset, ShardWalker, next_cursor
from .history import AttemptRecord, DigestCache, NoHistory, count_value, params_digest
from .sharded_evidence import optimizer_evidence, sharding_evidence
from .optimizer import make_optimizer
from .model import MLP, Shapes, init_params
from .phase_backend import PhaseBackend
from .recovery_hooks import Recovery
from .steprecord import StepTimes, moments as _moments, record_step
from .summary import Summary
from .watchdog import StepWatchdog, budget_for


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
    role: str = "contribute"
    transfers: object = None  # this worker's host/device copies in the step (device back-ends)
    losses: np.ndarray | None = None  # this worker's per-sample losses (contributors), for the history
    own: object = None  # this worker's own reduction, before recovery may share the root's outcome


digest = params_digest  # the history's digest: xxh3-128 of the float32 little-endian bytes


class Trainer:
    """One worker's state and the step loop. A subclass (mpibench.job.parts.RunParts) overrides, with
    ``super()``, only :meth:`step`, :meth:`next_batch`, :meth:`rollback`, :meth:`advance_known_cursors`."""

    def __init__(self, config: RunConfig, comm: Comm, backend, dataset: Dataset,
                 shards: list[np.ndarray], records: RunRecords, world_size: int,
                 recovery: Recovery | None = None, shard_id: int | None = None,
                 params: np.ndarray | None = None, cursor: Cursor | None = None,
                 strategy_factory=make_strategy, history=None, known_cursors=None):
        self.config, self.comm, self.backend = config, comm, backend
        self.dataset, self.shards, self.records = dataset, shards, records
        self.history = history or NoHistory()
        self.data_comm = comm  # the step group the strategy talks over (all members by default)
        self.world_size = world_size
        self.step_no = -1
        self.recovery = recovery or Recovery()
        self.strategy_factory = strategy_factory
        self.shapes = Shapes(config.features, config.hidden, config.classes)
        self.model = MLP(self.shapes)
        self.params = init_params(config.seed, self.shapes) if params is None else params
        self.params_before = np.empty_like(self.params)
        self._digest = DigestCache()  # an attempt's params_before is mostly the last params_after
        self.shard_id = comm.worker_id if shard_id is None else shard_id
        self.walker = ShardWalker(config.seed, self.shard_id, shards[self.shard_id], config.batch_size)
        self.cursor = cursor or Cursor()
        # Every worker's cursor after the last commit, kept by every worker from the
        # agreed outcome of each step (no communication): a replacement is handed its
        # dead worker's cursor from here.
        self.known_cursors: dict[int, Cursor] = {w: Cursor() for w in range(world_size)}
        self.known_cursors.update(known_cursors or {})
        self.known_cursors[comm.worker_id] = self.cursor
        self.optimizer = make_optimizer(config, self.params)  # None: plain SGD, no state
        self.strategy: SyncStrategy | None = self._strategy()
        self._sync: StepSync | None = None  # how the loop hands the strategy each step's gradient
        self.summary = Summary()
        self._steps_run = 0
        self._last_gradient = None  # (indices, params, grad_sum, count, losses) last computed

    def _strategy(self) -> SyncStrategy:
        options = options_of(self.config)
        backend = PhaseBackend(self.backend, lambda: self.data_comm.mark(self.step_no, "after_reduce"),
                               self.optimizer)
        return self.strategy_factory(self.config.strategy, self.data_comm, backend,
                                     self.shapes.n_params, options)

    def step_sync(self) -> StepSync:
        """How this step's gradient reaches the strategy: after the backward pass, or each layer's
        bucket during it (``--overlap``); built again whenever the strategy is."""
        if self._sync is None or self._sync.strategy is not self.strategy:
            self._sync = StepSync(self.strategy, self.shapes.backward_spans(), self.config.overlap)
        return self._sync

    def replace_comm(self, comm: Comm, data_comm: Comm | None = None) -> None:
        """Continue on a new membership (after a shrink or a respawn) and step group."""
        self.comm = comm
        self.set_data_comm(comm if data_comm is None else data_comm)

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
                self._steps_run = step + 1
                if committed is not None:
                    self._record(*committed)
        finally:
            watchdog.disarm()
        return self.summary

    def close_history(self) -> None:
        """The case ended normally on this worker (``close`` names how many steps it ran)."""
        self.history.close(self._steps_run)

    def _attempt(self, step: int):
        """Run ``step`` until it commits (or nobody may commit it), rolling back on a failure."""
        self.step_no = step
        attempt = 0
        while True:
            result, error = None, None
            held = self.params.copy()
            try:
                # Recovery may re-sync healed workers here: the rollback point is taken
                # after it, or a retry would roll them back to their stale parameters.
                self.recovery.begin(self, step)
            except CommError as exc:
                error = exc
            if not np.array_equal(held, self.params):
                self.history.resync(step, self.params)  # took the committing side's parameters
            cursor = self.cursor
            np.copyto(self.params_before, self.params)
            if self.optimizer is not None:
                self.optimizer.save()
            self._pending = StepOutcome(step, None, self.walker.shard[:0], cursor, None)
            if error is None:
                try:
                    result = self.step(step, cursor)
                except CommError as exc:
                    error = exc
            t0 = time.perf_counter()
            self._write_attempt(step, attempt, error)
            t1 = time.perf_counter()
            decision = self.recovery.commit(self, step, error)
            t2 = time.perf_counter()
            self.history.decision(step, attempt, decision)
            if decision == "commit":
                if result is not None:
                    result[1].commit_s, result[1].evidence_s = t2 - t1, t1 - t0 + time.perf_counter() - t2
                return result
            self.rollback(cursor)
            if decision == "skip":
                return None
            self.recovery.handle(self, step, error)
            attempt += 1

    def rollback(self, cursor: Cursor) -> None:
        """Undo an attempt that did not commit: its update and its batch."""
        np.copyto(self.params, self.params_before)
        if self.optimizer is not None:
            self.optimizer.restore()
        self.cursor = cursor

    def next_batch(self, cursor: Cursor) -> tuple[np.ndarray, Cursor]:
        """The batch at ``cursor`` in this worker's shard and the cursor after it."""
        return self.walker.batch(cursor)

    def _gradient(self, indices: np.ndarray, sync: StepSync):
        """The local gradient sum on ``indices``, each layer handed to ``sync`` as the backward
        pass completes it; a redo of the same batch from the same parameters (a retry after the
        step group changed) reuses the last one."""
        last, grad = self._last_gradient, self.model.grad_sum
        if last is not None and np.array_equal(last[0], indices) and np.array_equal(last[1], self.params):
            np.copyto(grad, last[2])  # the strategy may have reduced in place
            for layer in range(len(self.shapes.backward_spans())):
                sync.layer_done(layer, grad)
            return grad, last[3], last[4]
        grad_sum, count, losses = self.model.loss_and_grad_sum(
            self.params, self.dataset.features[indices], self.dataset.labels[indices],
            lambda layer: sync.layer_done(layer, grad))
        self._last_gradient = (indices.copy(), self.params.copy(), grad_sum.copy(), count, losses)
        return grad_sum, count, losses

    def step(self, step: int, cursor: Cursor):
        """One attempt at ``step`` from ``cursor`` (batch, gradient, sync, update): (the pending
        StepOutcome, its StepTimes); a CommError ends the attempt and the loop rolls it back."""
        start = time.perf_counter()
        role = self.recovery.role(self)
        pending = self._pending
        pending.role = role
        self.comm.mark(step, "before_compute")
        pending.excluded = self.recovery.excluded(self, step)
        if role == "stall":  # cut off from the committing side: nothing consumed, nothing applied
            indices, after, consumed = self.walker.shard[:0], cursor, False
        else:
            (indices, after), consumed = self.next_batch(cursor), True
        pending.batch, pending.consumed = indices, consumed
        reduction, loss_rows, effective_batch, times = None, None, 0, StepTimes()
        transfers_before = transfer_counts(self.backend)
        if role == "contribute":
            compute_start = time.perf_counter()
            sync = self.step_sync()
            sync.begin(len(indices), lambda: self.comm.mark(step, "reduce"))  # marked before the first message
            grad_sum, count, losses = self._gradient(indices, sync)
            pending.losses = losses
            sync_start = time.perf_counter()
            reduction = pending.own = sync.finish(self.params, grad_sum, count, self.config.lr)
            times.sync_s = time.perf_counter() - sync_start
            times.compute_s = sync_start - compute_start
            self.comm.mark(step, "after_apply")
            local_row = np.array([count, losses.sum(dtype=np.float64),
                                  np.square(losses, dtype=np.float64).sum()], dtype=np.float64)
            loss_rows = self.strategy.pool_loss(local_row, reduction.contributing)
            effective_batch = self.strategy.total_count()
        reduction, loss_rows, effective_batch = self.recovery.share(self, role, reduction, loss_rows,
                                                                    effective_batch)
        self.cursor = after
        pending.reduction, pending.loss_rows, pending.effective_batch = reduction, loss_rows, effective_batch
        if transfers_before is not None:
            pending.transfers = transfer_counts(self.backend) - transfers_before
        times.step_s = time.perf_counter() - start
        return pending, times

    # ------------------------------------------------------------------ history and records
    def _write_attempt(self, step: int, attempt: int, error) -> None:
        """This attempt's evidence, flushed before the commit agreement starts (every
        contributor writes the same: no rank is the recorder; see engine/history.py).
        Nothing is built where no history is kept (scaling points, calibration, benchmarks):
        the digests and the full copy would be work inside their timed loop."""
        if not getattr(self.history, "keeps", True):
            return
        p = self._pending
        group = sorted(self.data_comm.worker_ids) if self.data_comm is not None and p.role == "contribute" else []
        reduction = p.reduction
        full = p.role == "contribute" and reduction is not None and error is None
        mean, var, before = *_moments(p.loss_rows), [p.cursor_before.epoch, p.cursor_before.position]
        self.history.attempt(AttemptRecord(
            step=step, attempt=attempt, role=p.role, members=sorted(self.comm.worker_ids), group=group,
            shard=self.shard_id, cursor_before=before,
            cursor_after=[self.cursor.epoch, self.cursor.position] if error is None else before,
            batch=p.batch.tolist(), params_before=self._digest(self.params_before),
            params_after=self._digest(self.params),
            contributing=sorted(int(w) for w in reduction.contributing) if reduction is not None else None,
            effective_batch=count_value(p.effective_batch) if reduction is not None else None,
            pieces=[[int(o), int(n)] for o, n in reduction.pieces] if reduction is not None else None,
            total_length=int(reduction.total_length) if reduction is not None else None,
            loss_mean=mean, loss_var=var,
            error=" ".join(str(error).split()) if error is not None else None,
            full_after=self.params if full else None,  # written at once, no copy
            losses=p.losses if full and p.losses is not None else None,
            algorithm=getattr(reduction, "algorithm", None) or None,
            optimizer=optimizer_evidence(self.optimizer) if full else None,
            sharding=sharding_evidence(p.own, self.params) if full else None))

    def advance_known_cursors(self, outcome: StepOutcome) -> tuple[list[int], int | None]:
        """Move every member that consumed a batch this step; (epoch ends, lowest contributing epoch)."""
        ends, epochs = [], []
        contributing = set(outcome.reduction.contributing) if outcome.reduction is not None else set()
        for w in self.comm.worker_ids:
            if outcome.excluded.get(w) == "unreachable" or (outcome.role == "stall" and w == self.comm.worker_id):
                continue  # a stalled worker consumed nothing
            before = self.known_cursors.get(w, Cursor())
            after = next_cursor(before, len(self.shards[w]), self.config.batch_size)
            if w in contributing:
                epochs.append(before.epoch)
            if after.epoch != before.epoch:
                ends.append(w)
            self.known_cursors[w] = after
        return ends, min(epochs, default=None)

    def _record(self, outcome: StepOutcome, times: StepTimes) -> None:
        record_step(self, outcome, times)
