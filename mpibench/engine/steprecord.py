"""A committed step's record and its time, part by part.

A step's wall time splits into parts that each have their own cost: compute
(the local gradient on the batch), the reduction (the strategy's own
messages, with pack and apply; it also holds any wait for the last rank to
arrive), the commit protocol (the membership's agreement on the outcome), the
evidence (this worker's history lines for the attempt and the decision) and
the check (the bookkeeping after the commit, here). ``step_time_s`` stays the
compute-and-sync span it always was; the parts sit beside it in ``steps.csv``
(the first member's) and, every rank's, in the in-memory records of a scaling
point, where the wait for the last rank is told apart from the reduction.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mpibench.base.aggregate import moments_from_totals
from mpibench.base.records import ranks_text

PART_NAMES = ("compute_s", "sync_time_s", "commit_s", "evidence_s", "check_time_s")


@dataclass
class StepTimes:
    """One attempt's seconds, part by part (filled as the attempt goes)."""

    step_s: float = 0.0  # compute and sync: the step timer's span
    compute_s: float = 0.0
    sync_s: float = 0.0
    commit_s: float = 0.0
    evidence_s: float = 0.0

    def parts(self, check_s: float) -> tuple:
        """In ``PART_NAMES`` order."""
        return (self.compute_s, self.sync_s, self.commit_s, self.evidence_s, check_s)


def moments(rows) -> tuple[float | None, float | None]:
    if rows is None or not len(rows):
        return None, None
    found = moments_from_totals(*rows.sum(axis=0))
    return (None, None) if found is None else (float(found[0]), float(found[1]))


def record_step(trainer, outcome, times: StepTimes) -> None:
    """Count the committed step, move the known cursors, write its row (first member only)."""
    reduction = outcome.reduction
    record_start = time.perf_counter()
    epoch_ends, epoch = trainer.advance_known_cursors(outcome)
    loss_mean, loss_var = moments(outcome.loss_rows)
    trainer.summary.steps += 1
    trainer.summary.note_batch(outcome.effective_batch)
    records = trainer.records
    own_sync = getattr(records, "own_sync_s", None)  # in-memory records (scaling points) keep every rank's
    if own_sync is not None:
        own_sync.append(times.sync_s)
    own_parts = getattr(records, "own_parts", None)
    if own_parts is not None:
        own_parts.append(times.parts(time.perf_counter() - record_start))
    if trainer.comm.rank != 0:
        return
    c = trainer.config
    records.steps.write({
        "scenario": c.scenario, "strategy": c.strategy, "recovery": c.recovery,
        "step": outcome.step, "epoch": epoch,
        "members": ranks_text(trainer.comm.worker_ids),
        "contributing": ranks_text(reduction.contributing),
        "excluded": " ".join(f"{w}:{why}" for w, why in sorted(outcome.excluded.items())),
        "effective_batch": outcome.effective_batch,
        "epoch_ends": ranks_text(epoch_ends),
        "loss_mean": loss_mean, "loss_var": loss_var,
        "step_time_s": times.step_s, "sync_time_s": times.sync_s,
        "check_time_s": time.perf_counter() - record_start,
        "compute_s": times.compute_s, "commit_s": times.commit_s, "evidence_s": times.evidence_s,
        "algorithm": getattr(reduction, "algorithm", "")})
    transfers_log = getattr(records, "transfers", None)
    if outcome.transfers is not None and transfers_log is not None:
        transfers_log.write({"scenario": c.scenario, "strategy": c.strategy, "step": outcome.step,
                             "worker": trainer.comm.worker_id, "policy": trainer.backend.transfer.device_path,
                             **outcome.transfers.as_row()})


def parts_table(rows: list) -> np.ndarray:
    """Per-step parts as an array (steps x parts), for gathering over the ranks."""
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(PART_NAMES))
