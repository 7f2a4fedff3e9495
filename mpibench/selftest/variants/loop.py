"""Known-bad worker loops: the bug classes that live outside the arithmetic of a reduction.

Each is a mixin over :class:`mpibench.engine.worker.Trainer` that overrides one of
its public extension points (``next_batch``, ``rollback``, ``advance_known_cursors``,
``step``), handed to a run only through the run-parts hook (``run --run-parts
mpibench.selftest.variants:NAME``, :func:`mpibench.selftest.variants.run_parts`). The
checker must name each at the step where it happens:

* ``resume-epoch-start``: survivors hand a replacement the start of its dead
  worker's epoch instead of where it stood (data);
* ``shard-swap``: after a shrink, survivors walk the shard of their new rank (data);
* ``drop-tail``: the short last batch of an epoch is skipped (data);
* ``no-reshuffle``: every epoch walks epoch 0's order (data);
* ``keep-aborted``: a retry keeps the aborted attempt's update (equivalence:
  the redo does not start from the last commit);
* ``minority-commit``: workers cut off by a partition train on their own and
  commit the step too (membership: one step, two commits);
* ``skip-member`` (a strategy mixin): the highest member's batch is consumed
  but left out of the reduction (membership: a live worker left out).
"""
from __future__ import annotations

import numpy as np

from mpibench.engine.data import Cursor, ShardWalker
from mpibench.sync.base import Reduction


class ResumeEpochStart:
    def advance_known_cursors(self, outcome):
        result = super().advance_known_cursors(outcome)
        for w, c in self.known_cursors.items():
            if w != self.comm.worker_id:
                self.known_cursors[w] = Cursor(c.epoch, 0)
        return result


class ShardSwap:
    def next_batch(self, cursor):
        if self.comm.size < self.world_size and self.shard_id != self.comm.rank:
            self.shard_id = self.comm.rank
            self.walker = ShardWalker(self.config.seed, self.shard_id, self.shards[self.shard_id],
                                      self.config.batch_size)
        return super().next_batch(cursor)


class DropTail:
    def next_batch(self, cursor):
        indices, after = super().next_batch(cursor)
        if cursor.position > 0 and len(indices) < self.config.batch_size:
            return super().next_batch(Cursor(cursor.epoch + 1, 0))
        return indices, after


class NoReshuffle:
    def next_batch(self, cursor):
        indices, after = super().next_batch(Cursor(0, cursor.position))
        return indices, Cursor(cursor.epoch + after.epoch, after.position)


class KeepAborted:
    def rollback(self, cursor):
        self.cursor = cursor  # the batch is rolled back, the update is not


class MinorityCommit:
    def step(self, step, cursor):
        pending, times = super().step(step, cursor)
        if pending.role != "stall":
            return pending, times
        indices, after = self.next_batch(cursor)
        grad_sum, count, losses = self.model.loss_and_grad_sum(
            self.params, self.dataset.features[indices], self.dataset.labels[indices])
        self.params -= np.float32(self.config.lr / max(count, 1)) * grad_sum
        n = len(self.params) + 1
        pending.role, pending.batch, pending.consumed = "contribute", indices, True
        pending.reduction, pending.effective_batch = Reduction((self.comm.worker_id,), [(0, n)], n), count
        pending.loss_rows = np.array([[count, losses.sum(dtype=np.float64),
                                       np.square(losses, dtype=np.float64).sum()]])
        self.cursor = after
        return pending, times


class SkipMemberMixin:
    """Strategy mixin: the highest member reduces a zero gradient and is reported as absent."""

    def synchronize(self, params, grad_sum, count, lr):
        last = max(self.comm.worker_ids)
        if self.comm.worker_id == last:
            grad_sum, count = np.zeros_like(grad_sum), 0
        reduction = super().synchronize(params, grad_sum, count, lr)
        kept = tuple(w for w in reduction.contributing if w != last)
        return Reduction(kept, reduction.pieces, reduction.total_length)


LOOP_MUTANTS = {"resume-epoch-start": ResumeEpochStart, "shard-swap": ShardSwap, "drop-tail": DropTail,
                "no-reshuffle": NoReshuffle, "keep-aborted": KeepAborted, "minority-commit": MinorityCommit}
