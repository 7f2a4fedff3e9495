"""Each invariant passes on an honest step and fails on the matching defect."""
import numpy as np
import pytest

from mpibench.data import ShardWalker, Cursor, make_dataset, make_shards
from mpibench.invariants import Batch, Checker, ModelSpec, StepEvidence
from mpibench.model import MLP, Shapes, init_params

SHAPES = Shapes(5, 6, 3)
LR = 0.5


def honest_step(workers=3, seed=0, batch_size=4, samples=30):
    data = make_dataset(seed, samples, SHAPES.n_features, SHAPES.n_classes)
    shards = make_shards(seed, samples, workers)
    params = init_params(seed, SHAPES)
    batches, total, count = {}, np.zeros(SHAPES.n_params, np.float64), 0
    for w in range(workers):
        idx, _ = ShardWalker(seed, w, shards[w], batch_size).batch(Cursor())
        g, n, _ = MLP(SHAPES).loss_and_grad_sum(params, data.features[idx], data.labels[idx])
        total += g
        count += n
        batches[w] = Batch(w, w, idx, 0, 0)
    after = params - np.float32(LR) * (total / count).astype(np.float32)
    union = np.concatenate([b.indices for b in batches.values()])
    losses = MLP(SHAPES).loss_and_grad_sum(params, data.features[union], data.labels[union])[2].astype(np.float64)
    members = tuple(range(workers))
    evidence = StepEvidence(
        step=0, members=members, contributing=members, expected_contributing=members, batches=batches,
        params_before=params, params_after=after.astype(np.float32), digests={w: "d" for w in members},
        pieces=[(0, SHAPES.n_params + 1)], total_length=SHAPES.n_params + 1, effective_batch=count,
        loss_mean=float(losses.mean()), loss_var=float(losses.var()), lr=LR)
    checker = Checker(data.features, data.labels, shards, batch_size, ModelSpec(SHAPES.hidden, SHAPES.n_classes))
    return checker, evidence


def verdicts(checker, evidence):
    return {v.invariant: v for v in checker.check(evidence)}


def test_honest_step_passes_all_six():
    checker, ev = honest_step()
    result = verdicts(checker, ev)
    assert len(result) == 6 and all(v.passed is True for v in result.values()), result


def broken(name):
    checker, ev = honest_step()
    if name == "equivalence":
        ev.params_after = ev.params_after + np.float32(1e-3)
    elif name == "equivalence-variance":
        ev.loss_var = ev.loss_var * 0.9
    elif name == "replicas":
        ev.digests[2] = "other"
    elif name == "accounting":
        ev.effective_batch += 1
    elif name == "membership":
        ev.expected_contributing = ev.members + (7,)
    elif name == "data":
        ev.batches[1].indices = ev.batches[0].indices
    elif name == "coverage":
        ev.pieces = [(0, 10), (9, ev.total_length - 9)]
    return checker, ev


@pytest.mark.parametrize("name", ["equivalence", "equivalence-variance", "replicas", "accounting",
                                  "membership", "data", "coverage"])
def test_each_defect_caught_by_its_invariant(name):
    checker, ev = broken(name)
    result = verdicts(checker, ev)
    invariant = name.split("-")[0]
    assert result[invariant].passed is False, result[invariant]
    assert result[invariant].detail


def test_commit_twice_is_a_membership_violation():
    checker, ev = honest_step()
    assert verdicts(checker, ev)["membership"].passed
    assert verdicts(checker, ev)["membership"].passed is False


def test_a_check_that_raises_is_unknown_not_passed():
    checker, ev = honest_step()
    ev.params_before = None
    result = verdicts(checker, ev)
    assert result["equivalence"].passed is None and "raised" in result["equivalence"].detail


def test_sample_reused_within_epoch():
    checker, ev = honest_step()
    verdicts(checker, ev)
    ev.step = 1
    assert verdicts(checker, ev)["data"].passed is False


def test_overlapping_shards_detected():
    data = make_dataset(0, 10, SHAPES.n_features, SHAPES.n_classes)
    shards = [np.arange(0, 6), np.arange(5, 10)]
    checker = Checker(data.features, data.labels, shards, 2, ModelSpec(SHAPES.hidden, SHAPES.n_classes))
    assert checker.partition_problem == "shards overlap"


def test_a_step_must_start_from_the_last_commit():
    checker, ev = honest_step()
    assert verdicts(checker, ev)["equivalence"].passed
    ev.step = 1
    ev.params_before = ev.params_before + np.float32(1e-3)  # not what step 0 committed
    result = verdicts(checker, ev)["equivalence"]
    assert result.passed is False and "committed at step 0" in result.detail
