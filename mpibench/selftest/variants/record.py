"""Known-bad runs whose mistake lies in what a record claims, in a value or in a step
the online check thins away: the self-test's second catalogue (see :mod:`.mutants`).

Trainer mixins (installed like :mod:`.loop_mutants`):

* ``stall-claims-batch``: a stalled worker's record claims the batch at its
  cursor although its cursor does not move (contract);
* ``lone-recorder``: only worker 0 records its full parameter copy and its
  per-sample losses; the other contributors leave theirs out (contract);
* ``late-keeps-batch``: a dropped straggler does not count its batch as
  consumed and walks it again (contract, then data);
* ``abort-advances``: the walk moves on when a batch is taken and a rollback
  undoes the update but not the walk, so the redo skips a batch (contract, data);
* ``copy-lies``: the highest contributor's record of step 2 claims one sample
  more than the step's effective batch; the lowest worker's copy is right
  (accounting);
* ``late-copy-lies``: a dropped straggler's record claims a loss mean 0.25 off
  the committed one (equivalence);
* ``steps-csv-lies``: the row of step 2 in ``steps.csv`` claims one sample more
  than the step's effective batch; every history record is right (accounting).

Strategy mixins (installed like :mod:`.mutants`' arithmetic ones):

* ``step3-lr``: the fourth reduction (step 3 of a fault-free run) applies
  1.5x the learning rate; with ``--check-every 4`` the online check skips
  that step's reference, the verdict of record does not (equivalence);
* ``nan-count`` / ``nan-grad``: the third reduction's buffer holds NaN in the
  count slot / in a gradient element on the highest worker (accounting,
  equivalence; the job must end normally with the step's record written);
* ``float32-loss``: the loss sums travel and add in float32 (equivalence,
  against the exact float64 pooling of the recorded per-sample losses);
* ``stale-loss``: each step reports the previous step's loss statistics
  (equivalence).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np


# ---------------------------------------------------------------------------- what records claim
class StallClaimsBatch:
    def step(self, step, cursor):
        pending, times = super().step(step, cursor)
        if pending.role == "stall":
            pending.batch = self.next_batch(cursor)[0]  # claimed as consumed; the cursor stays
        return pending, times


class _WithoutEvidence:
    """A history that drops the full copy and the losses from every attempt record."""

    def __init__(self, history):
        self._history = history

    def __getattr__(self, name):
        return getattr(self._history, name)

    def attempt(self, record) -> None:
        self._history.attempt(replace(record, full_after=None, losses=None))


class LoneRecorder:
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self.comm.worker_id != 0:
            self.history = _WithoutEvidence(self.history)


class LateKeepsBatch:
    def step(self, step, cursor):
        pending, times = super().step(step, cursor)
        if pending.role == "late":
            self.cursor = cursor  # the batch is walked again next step
        return pending, times


class AbortAdvances:
    """The walk moves on as soon as a batch is taken (a loader that advances on fetch), and
    the rollback undoes the update but forgets the walk."""

    def next_batch(self, cursor):
        indices, after = super().next_batch(cursor)
        self.cursor = after
        return indices, after

    def rollback(self, cursor):
        np.copyto(self.params, self.params_before)


class _LyingHistory(_WithoutEvidence):
    """A history whose attempt records pass through ``lie`` before they are written."""

    def __init__(self, history, lie):
        super().__init__(history)
        self._lie = lie

    def attempt(self, record) -> None:
        self._history.attempt(self._lie(record))


class CopyLies:
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self.comm.worker_id == max(self.comm.worker_ids):
            self.history = _LyingHistory(self.history, lambda r: replace(
                r, effective_batch=r.effective_batch + 1) if r.step == 2 and r.effective_batch is not None else r)


class LateCopyLies:
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.history = _LyingHistory(self.history, lambda r: replace(
            r, loss_mean=r.loss_mean + 0.25) if r.role == "late" and r.loss_mean is not None else r)


class _LyingSteps:
    """Record files whose steps.csv row of step 2 claims one sample more."""

    def __init__(self, records):
        self._records = records

    def __getattr__(self, name):
        return getattr(self._records, name)

    @property
    def steps(self):
        log = self._records.steps

        class Lying:
            def write(self, row: dict) -> None:
                if row.get("step") == 2:
                    row = {**row, "effective_batch": row["effective_batch"] + 1}
                log.write(row)

            def close(self) -> None:
                log.close()

        return Lying()


class StepsCsvLies:
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.records = _LyingSteps(self.records)


RECORD_LOOP_MUTANTS = {"stall-claims-batch": StallClaimsBatch, "lone-recorder": LoneRecorder,
                       "late-keeps-batch": LateKeepsBatch, "abort-advances": AbortAdvances,
                       "copy-lies": CopyLies, "late-copy-lies": LateCopyLies, "steps-csv-lies": StepsCsvLies}


# ---------------------------------------------------------------------------- values
def _nth_call(strategy, name: str) -> int:
    """How many times this strategy instance has been through ``name`` (1 on the first)."""
    calls = getattr(strategy, "_mutant_calls", {})
    calls[name] = calls.get(name, 0) + 1
    strategy._mutant_calls = calls
    return calls[name]


class Step3LrMixin:
    def synchronize(self, params, grad_sum, count, lr):
        boost = 1.5 if _nth_call(self, "synchronize") == 4 else 1.0
        return super().synchronize(params, grad_sum, count, lr * boost)


class NanCountMixin:
    slot = -1  # the count slot

    def reduce(self, buf):
        if _nth_call(self, "reduce") == 3 and self.comm.worker_id == max(self.comm.worker_ids):
            buf[self.slot] = np.float32("nan")
        return super().reduce(buf)


class NanGradMixin(NanCountMixin):
    slot = 0  # the first gradient element


class Float32LossMixin:
    def pool_loss(self, local_row, contributing):
        return super().pool_loss(local_row, contributing).astype(np.float32).astype(np.float64)


class StaleLossMixin:
    def pool_loss(self, local_row, contributing):
        rows = super().pool_loss(local_row, contributing)
        last, self._last_rows = getattr(self, "_last_rows", None), rows
        return rows if last is None else last


RECORD_MIXINS = {"step3-lr": Step3LrMixin, "nan-count": NanCountMixin, "nan-grad": NanGradMixin,
                 "float32-loss": Float32LossMixin, "stale-loss": StaleLossMixin}
