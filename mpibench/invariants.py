"""The six invariants, checked on the evidence of one committed step.

The checker reads what the workers did (batches, parameters before and after,
digests, pieces, the fault log's view of who should have contributed) and
compares it with the single-process reference. It imports nothing from the
sync strategies, the kernels or the aggregation helpers of the production
path: every comparison here is computed its own way, in float64.

Verdicts are three-valued: passed, failed, or unknown (the check itself
raised), and an unknown verdict is never counted as a pass.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .reference import reference_step

NAMES = ("equivalence", "replicas", "accounting", "membership", "data", "coverage")
EPS32 = float(np.finfo(np.float32).eps)


@dataclass
class Batch:
    """One worker's part of a step, as the checker sees it."""

    worker: int
    shard: int
    indices: np.ndarray
    epoch: int
    position: int  # position in the epoch order before this batch


@dataclass
class StepEvidence:
    step: int
    members: tuple[int, ...]
    contributing: tuple[int, ...]
    expected_contributing: tuple[int, ...]  # from the fault log: alive, reachable, on time
    batches: dict[int, Batch]  # worker id -> batch consumed this step
    params_before: np.ndarray
    params_after: np.ndarray
    digests: dict[int, str]  # worker id -> digest of its parameters after the commit
    pieces: list[tuple[int, int]]
    total_length: int
    effective_batch: int  # the count the reduction produced
    loss_mean: float | None
    loss_var: float | None
    lr: float


@dataclass
class Verdict:
    invariant: str
    passed: bool | None  # None: the check could not be decided
    detail: str


@dataclass
class ModelSpec:
    hidden: int
    n_classes: int


def equivalence_tolerance_text() -> str:
    return ("|dθ - dθ_ref| <= lr·K·ε32·mean_i|g_i| + 2·ε32·(|θ_before|+|θ_after|), "
            "K = 2(features+hidden+classes) + union size + members; "
            "loss mean/var within K·ε32·max(1, mean loss²)")


class Checker:
    """Holds what must persist across steps (samples seen, steps committed)."""

    def __init__(self, features, labels, shards: list[np.ndarray], batch_size: int, spec: ModelSpec,
                 complete_history: bool = True):
        self.features, self.labels = features, labels
        self.shards = [np.asarray(s) for s in shards]
        self.shard_sets = [set(s.tolist()) for s in self.shards]
        self.batch_size = batch_size
        # With thinned checks the checker does not see every batch, so it cannot
        # tell whether an epoch used its whole shard; it still checks each batch.
        self.complete_history = complete_history
        self.spec = spec
        self.seen: dict[tuple[int, int], set[int]] = {}
        self.committed: set[int] = set()
        self.last_commit: tuple[int, np.ndarray] | None = None  # (step, parameters after it)
        self.partition_problem = self._check_partition()

    def _check_partition(self) -> str | None:
        together = np.concatenate(self.shards) if self.shards else np.zeros(0, int)
        if len(together) != len(np.unique(together)):
            return "shards overlap"
        if len(together) != len(self.labels) or not np.array_equal(np.sort(together), np.arange(len(self.labels))):
            return "shards do not cover the data set"
        return None

    def check(self, ev: StepEvidence) -> list[Verdict]:
        verdicts = []
        for name in NAMES:
            try:
                passed, detail = getattr(self, f"_{name}")(ev)
            except Exception as exc:  # a broken check is unknown, never a pass
                passed, detail = None, f"check raised {type(exc).__name__}: {exc}"
            verdicts.append(Verdict(name, passed, detail))
        self.committed.add(ev.step)
        self.last_commit = (ev.step, np.array(ev.params_after, copy=True))
        return verdicts

    # ------------------------------------------------------------------ the six checks
    def _union(self, ev: StepEvidence) -> np.ndarray:
        parts = [ev.batches[w].indices for w in ev.contributing if w in ev.batches]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def _equivalence(self, ev: StepEvidence):
        if self.complete_history and self.last_commit is not None:
            # Each update must start from what the previous commit left: a rollback
            # that restored the wrong parameters, or an update applied twice, breaks it.
            last_step, last_after = self.last_commit
            if not np.array_equal(ev.params_before, last_after):
                changed = int(np.count_nonzero(ev.params_before != last_after))
                return False, (f"step {ev.step} started from parameters that differ from those "
                               f"committed at step {last_step} ({changed} elements)")
        union = self._union(ev)
        ref = reference_step(ev.params_before, self.features, self.labels, union,
                             self.spec.hidden, self.spec.n_classes)
        before = ev.params_before.astype(np.float64)
        after = ev.params_after.astype(np.float64)
        applied = after - before
        expected = -ev.lr * ref.grad_mean
        k = 2 * (self.features.shape[1] + self.spec.hidden + self.spec.n_classes) + ref.n_samples + len(ev.members)
        tol = ev.lr * k * EPS32 * ref.grad_abs_mean + 2 * EPS32 * (np.abs(before) + np.abs(after)) + 1e-30
        excess = np.abs(applied - expected) / tol
        worst = int(np.argmax(excess)) if len(excess) else 0
        if len(excess) and excess[worst] > 1:
            return False, (f"update differs from the reference over {ref.n_samples} samples: "
                           f"element {worst} applied {applied[worst]:.9g} expected {expected[worst]:.9g} "
                           f"({excess[worst]:.3g}x tolerance)")
        loss_problem = self._loss_moments_problem(ev, ref.losses, k)
        if loss_problem:
            return False, loss_problem
        ratio = float(excess[worst]) if len(excess) else 0.0
        return True, f"{ref.n_samples} samples; worst element at {ratio:.2g}x tolerance"

    def _loss_moments_problem(self, ev: StepEvidence, losses: np.ndarray, k: int) -> str | None:
        if len(losses) == 0:
            if ev.loss_mean is not None and not np.isnan(ev.loss_mean):
                return f"loss mean {ev.loss_mean} reported for an empty union"
            return None
        mean, var = float(losses.mean()), float(losses.var())
        tol = k * EPS32 * max(1.0, float(np.mean(losses**2)))
        if ev.loss_mean is None or abs(ev.loss_mean - mean) > tol:
            return f"loss mean {ev.loss_mean} but reference {mean:.9g} (tolerance {tol:.2g})"
        if ev.loss_var is None or abs(ev.loss_var - var) > tol:
            return f"loss variance {ev.loss_var} but reference {var:.9g} (tolerance {tol:.2g})"
        return None

    def _replicas(self, ev: StepEvidence):
        digests = {ev.digests.get(w) for w in ev.members}
        if len(digests) != 1 or None in digests:
            groups: dict[str, list[int]] = {}
            for w in ev.members:
                groups.setdefault(str(ev.digests.get(w))[:12], []).append(w)
            return False, "parameters differ: " + "; ".join(f"{d}: {' '.join(map(str, ws))}" for d, ws in groups.items())
        return True, f"{len(ev.members)} replicas identical"

    def _accounting(self, ev: StepEvidence):
        counts = {w: len(ev.batches[w].indices) for w in ev.contributing if w in ev.batches}
        union = self._union(ev)
        total = sum(counts.values())
        if len(np.unique(union)) != len(union):
            return False, "a sample appears twice in the union"
        if not (ev.effective_batch == total == len(union)):
            return False, (f"effective batch {ev.effective_batch}, contributing counts sum to {total}, "
                           f"union holds {len(union)}")
        zero = [w for w, n in counts.items() if n == 0]
        detail = f"effective batch {total}" + (f"; zero-count: {' '.join(map(str, zero))}" if zero else "")
        return True, detail

    def _membership(self, ev: StepEvidence):
        contributing, expected, members = set(ev.contributing), set(ev.expected_contributing), set(ev.members)
        if ev.step in self.committed:
            return False, f"step {ev.step} committed twice"
        if not contributing <= members:
            return False, f"contribution from outside the membership: {sorted(contributing - members)}"
        if contributing - expected:
            return False, f"contribution from excluded workers: {sorted(contributing - expected)}"
        if expected - contributing:
            return False, f"live reachable workers left out: {sorted(expected - contributing)}"
        return True, f"{len(contributing)} of {len(members)} members contributed"

    def _data(self, ev: StepEvidence):
        if self.partition_problem:
            return False, self.partition_problem
        missing = [w for w in ev.contributing if w not in ev.batches]
        if missing:
            return False, f"no batch recorded for contributing workers {missing}"
        # Every consumed batch counts, contributing or not: a dropped straggler's
        # batch is lost to the step but still used up its samples for the epoch.
        for w, batch in sorted(ev.batches.items()):
            shard = self.shards[batch.shard]
            idx = batch.indices.tolist()
            if not set(idx) <= self.shard_sets[batch.shard]:
                return False, f"worker {w} used samples outside shard {batch.shard}"
            expected_size = min(self.batch_size, len(shard) - batch.position)
            if len(idx) != expected_size:
                return False, (f"worker {w} batch of {len(idx)} at position {batch.position} "
                               f"(shard of {len(shard)}, batch size {self.batch_size} gives {expected_size})")
            seen = self.seen.setdefault((batch.shard, batch.epoch), set())
            again = seen.intersection(idx)
            if again:
                return False, f"worker {w} reused {len(again)} samples in epoch {batch.epoch}"
            seen.update(idx)
            if self.complete_history and batch.position + len(idx) == len(shard) and len(seen) != len(shard):
                return False, f"shard {batch.shard} epoch {batch.epoch} ended with {len(seen)} of {len(shard)} samples"
        return True, "batches inside shards, no sample reused in its epoch"

    def _coverage(self, ev: StepEvidence):
        spans = sorted(ev.pieces)
        cursor = 0
        for offset, length in spans:
            if length == 0 and 0 <= offset <= ev.total_length:
                continue
            if offset < 0 or length < 0 or offset + length > ev.total_length:
                return False, f"piece ({offset}, {length}) outside [0, {ev.total_length})"
            if offset > cursor:
                return False, f"gap [{cursor}, {offset})"
            if offset < cursor:
                return False, f"overlap at {offset}"
            cursor = offset + length
        if cursor != ev.total_length:
            return False, f"pieces end at {cursor} of {ev.total_length}"
        return True, f"{len(spans)} pieces cover {ev.total_length} elements"
