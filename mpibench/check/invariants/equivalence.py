"""``equivalence``: each step starts from the last commit and applies the reference update.

Every committing worker's ``params_before`` must be what the previous commit
left (or what a resync handed over), at any ``--check-every``. Only the
float64 reference comparison is thinned: it runs on steps divisible by
``check_every``, using the full parameter copies of the step group's
lowest-id member.
"""
from __future__ import annotations

import numpy as np

from ..history import full_params, params_digest
from ..reference import reference_step
from .accounting import contributor_batches

NAME = "equivalence"
EPS32 = float(np.finfo(np.float32).eps)


def tolerance_text() -> str:
    return ("|dθ - dθ_ref| <= lr·K·ε32·mean_i|g_i| + 2·ε32·(|θ_before|+|θ_after|), "
            "K = 2(features+hidden+classes) + union size + members; "
            "loss mean/var within K·ε32·max(1, mean loss²)")


def check(case, view):
    problem = start_problem(view)
    if problem:
        return False, problem
    if view.step % case.check_every:
        return True, f"starts from the last commit; reference skipped (check every {case.check_every})"
    return reference_problem(case, view)


def start_problem(view) -> str | None:
    """A resync or a committing worker that did not start from the last commit."""
    since = "the initial parameters" if view.start_step is None else f"the commit of step {view.start_step}"
    for worker, d in sorted(view.resyncs):
        if d != view.start_digest:
            return f"worker {worker} resynced to parameters {d[:12]} that differ from {since} ({view.start_digest[:12]})"
    for a in sorted(view.active, key=lambda a: a.worker):
        if a.params_before != view.start_digest:
            return (f"worker {a.worker} started step {view.step} from parameters {a.params_before[:12]}, "
                    f"not from {since} ({view.start_digest[:12]})")
    return None


def reference_problem(case, view):
    full = [a for a in view.active if a.full_before is not None and a.full_after is not None]
    if not full:
        return None, "no full parameter copy recorded for the step"
    a = min(full, key=lambda a: a.worker)
    before, after = full_params(a.full_before), full_params(a.full_after)
    if params_digest(before) != a.params_before or params_digest(after) != view.agreed.params_after:
        return False, f"worker {a.worker}'s full parameter copies do not match its digests"
    features, labels = case.data
    batches = contributor_batches(view)
    union = np.array([i for w in sorted(batches) for i in batches[w]], dtype=np.int64)
    c = case.config
    ref = reference_step(before, features, labels, union, c["hidden"], c["classes"])
    b64, a64 = before.astype(np.float64), after.astype(np.float64)
    applied, expected = a64 - b64, -c["lr"] * ref.grad_mean
    k = 2 * (c["features"] + c["hidden"] + c["classes"]) + ref.n_samples + len(view.agreed.members)
    tol = c["lr"] * k * EPS32 * ref.grad_abs_mean + 2 * EPS32 * (np.abs(b64) + np.abs(a64)) + 1e-30
    excess = np.abs(applied - expected) / tol
    worst = int(np.argmax(excess)) if len(excess) else 0
    if len(excess) and excess[worst] > 1:
        return False, (f"update differs from the reference over {ref.n_samples} samples: element {worst} "
                       f"applied {applied[worst]:.9g} expected {expected[worst]:.9g} ({excess[worst]:.3g}x tolerance)")
    loss = loss_problem(view.agreed, ref.losses, k)
    if loss:
        return False, loss
    ratio = float(excess[worst]) if len(excess) else 0.0
    return True, f"{ref.n_samples} samples; worst element at {ratio:.2g}x tolerance"


def loss_problem(agreed, losses: np.ndarray, k: int) -> str | None:
    if len(losses) == 0:
        if agreed.loss_mean is not None:
            return f"loss mean {agreed.loss_mean} reported for an empty union"
        return None
    mean, var = float(losses.mean()), float(losses.var())
    tol = k * EPS32 * max(1.0, float(np.mean(losses**2)))
    if agreed.loss_mean is None or abs(agreed.loss_mean - mean) > tol:
        return f"loss mean {agreed.loss_mean} but reference {mean:.9g} (tolerance {tol:.2g})"
    if agreed.loss_var is None or abs(agreed.loss_var - var) > tol:
        return f"loss variance {agreed.loss_var} but reference {var:.9g} (tolerance {tol:.2g})"
    return None
