"""``equivalence``: each step starts from the last commit and applies the reference update.

Every committing worker's ``params_before`` must be what the previous commit
left (or what a resync handed over). The float64 reference comparison needs
the parameters before and after the step in full: after is any committing
contributor's own copy (each writes one; the lowest worker id's is used, and
its digest must be the agreed one); before is the previous commit's copy, kept
here as the steps are walked (the seed's initial parameters before the first
commit), so every step can be compared. The online check thins the
comparison to steps divisible by ``--check-every``; the verdict of record
(``check DIR`` and the job's final verdict) compares every step.

The loss statistics are judged twice: each contributor's recorded per-sample
float32 losses against the reference's float64 ones (float32 tolerance), and
the reported mean and variance against their exact float64 recomputation from
those recorded losses (float64 tolerance: the production path must pool them
in float64, so float32 accumulation shows here). The reported statistics are
judged in every copy: the commit's record, every other record told the outcome
(each contributor's, a dropped straggler's, a stalled member's) and the step's
row of ``steps.csv``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..history import floats32, full_params, params_digest
from .. import optimizer_model
from ..reference import reference_steps
from ..steprows import moments_targets
from .accounting import contributor_batches

NAME = "equivalence"
EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)


def tolerance_text() -> str:
    return ("|dθ - dθ_ref| <= lr·K·ε32·mean_i|g_i| + 2·ε32·(|θ_before|+|θ_after|), "
            "K = 2(features+hidden+classes) + union size + members; "
            "per-sample losses within K·ε32·max(1, |loss|) of the reference; loss mean/var within "
            "4·n·ε64·max(1, ·) of their float64 recomputation from the recorded per-sample losses")


def check(case, view):
    problem = start_problem(view)
    if problem:
        return False, problem
    if view.step % case.reference_every:
        return True, f"starts from the last commit; reference skipped (check every {case.reference_every})"
    due = _table(case).get(view.step)
    if due is None or due.after is None:
        return None, "no full parameter copy of the committed parameters recorded for the step"
    if due.ref is None:
        return None, "no full parameter copy of the parameters the step started from"
    return reference_problem(case, view, due)


@dataclass(frozen=True)
class Due:
    """One step's full parameters before and after it, and its reference (None: no copy)."""

    before: np.ndarray | None
    after: np.ndarray | None
    ref: object = None


def _table(case) -> dict:
    """Every committed step's copies and, where the reference is due, its reference: the
    chain of copies walked once (before = the previous commit's own copy, or the seed's
    initial parameters), and every due step's reference computed in one stacked pass."""
    table = case.state.get(NAME)
    if table is not None:
        return table
    table, last, due = {}, (case.initial_digest(), case.initial_params), []
    for view in case.views():
        if view.agreed is None:
            continue
        after = _after_copy(view)
        before = last[1] if last[0] == view.start_digest else None
        table[view.step] = Due(before, after)
        # With optimizer state every step's reference is needed: each state builds on the last.
        every = view.step % case.reference_every == 0 or optimizer_model.stateful(case)
        if every and before is not None and after is not None:
            due.append((view.step, _union(view)))
        last = (view.agreed.params_after, after)
    features, labels = case.data
    c = case.config
    refs = reference_steps([table[s].before for s, _ in due], features, labels, [u for _, u in due],
                           c["hidden"], c["classes"])
    for (step, _), ref in zip(due, refs):
        table[step] = Due(table[step].before, table[step].after, ref)
    case.state[NAME] = table
    return table


def _union(view) -> np.ndarray:
    batches = contributor_batches(view)
    return np.array([i for w in sorted(batches) for i in batches[w]], dtype=np.int64)


def _after_copy(view) -> np.ndarray | None:
    """The lowest committing contributor's own full copy, if it matches the agreed digest."""
    for a in sorted(view.active, key=lambda a: a.worker):
        if a.full_after is not None and a.params_after == view.agreed.params_after:
            after = full_params(a.full_after)
            return after if params_digest(after, a.params_after) == a.params_after else None
    return None


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


def reference_problem(case, view, due: Due):
    before, after, ref = due.before, due.after, due.ref
    batches = contributor_batches(view)
    c = case.config
    b64, a64 = before.astype(np.float64), after.astype(np.float64)
    k = error_terms(case, view, ref)
    direction, bound = optimizer_model.direction(case, view.step, _table(case),
                                                 lambda v, r: error_terms(case, v, r) * EPS32 * r.grad_abs_mean)
    if direction is None:
        return None, (f"{optimizer_model.kind(case)}: no reference optimizer state (a committed step before "
                      "it has no reference)")
    applied, expected = a64 - b64, -c["lr"] * direction
    tol = c["lr"] * bound + 2 * EPS32 * (np.abs(b64) + np.abs(a64)) + 1e-30
    if not optimizer_model.stateful(case):
        tol = tol + c["lr"] * k * EPS32 * ref.grad_abs_mean
    with np.errstate(all="ignore"):  # NaN and inf are judged below, not warned about
        excess = np.abs(applied - expected) / tol
    bad = ~(excess <= 1)  # NaN and inf are never within tolerance
    if bad.any():
        worst = int(np.flatnonzero(bad)[np.argmax(np.nan_to_num(excess[bad], nan=np.inf))])
        return False, (f"update differs from the reference over {ref.n_samples} samples: element {worst} "
                       f"applied {applied[worst]:.9g} expected {expected[worst]:.9g} ({excess[worst]:.3g}x tolerance)")
    loss = loss_problem(case, view, batches, ref.losses, k)
    if loss:
        return False, loss
    ratio = float(excess.max()) if len(excess) else 0.0
    return True, f"{ref.n_samples} samples; worst element at {ratio:.2g}x tolerance"


def error_terms(case, view, ref) -> int:
    """K of the float32 bound: the terms summed into one gradient element."""
    c = case.config
    return 2 * (c["features"] + c["hidden"] + c["classes"]) + ref.n_samples + len(view.agreed.members)


def recorded_losses(view, batches: dict) -> np.ndarray | None:
    """The contributors' own per-sample float32 losses, in union order (None if any is missing)."""
    own = {a.worker: a for a in view.active}
    parts = []
    for w in sorted(batches):
        if own[w].losses is None:
            return None
        parts.append(floats32(own[w].losses))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def loss_problem(case, view, batches: dict, ref_losses: np.ndarray, k: int) -> str | None:
    agreed = view.agreed
    if len(ref_losses) == 0:
        for name, holder in [("", agreed)] + moments_targets(case, view):
            if holder.loss_mean is not None:
                return f"{name + ': ' if name else ''}loss mean {holder.loss_mean} reported for an empty union"
        return None
    recorded = recorded_losses(view, batches)
    if recorded is None or len(recorded) != len(ref_losses):  # judged against the reference alone
        mean, var = float(ref_losses.mean()), float(ref_losses.var())
        tol = k * EPS32 * max(1.0, float(np.mean(ref_losses**2)))
        return _every_copy(case, view, mean, var, tol, tol, "reference")
    off = np.abs(recorded.astype(np.float64) - ref_losses) / (k * EPS32 * np.maximum(1.0, np.abs(ref_losses)))
    if not (off <= 1).all():
        i = int(np.argmax(np.nan_to_num(off, nan=np.inf)))
        return f"recorded per-sample loss {i} of the union is {recorded[i]!r}, reference {ref_losses[i]:.9g}"
    values = recorded.astype(np.float64)
    n = len(values)
    total, squares = math.fsum(values), math.fsum(values * values)
    mean = total / n
    var = squares / n - mean * mean
    tol_mean = 4 * n * EPS64 * max(1.0, abs(mean))
    tol_var = 4 * n * EPS64 * max(1.0, squares / n + mean * mean)
    return _every_copy(case, view, mean, var, tol_mean, tol_var, "float64 over the recorded losses")


def _every_copy(case, view, mean: float, var: float, tol_mean: float, tol_var: float, what: str) -> str | None:
    """The commit's own statistics first (named as ever), then every other copy, named."""
    problem = _moments_problem(view.agreed, mean, var, tol_mean, tol_var, what)
    for name, holder in moments_targets(case, view):
        if problem:
            break
        problem = _moments_problem(holder, mean, var, tol_mean, tol_var, what)
        problem = problem and f"{name}: {problem}"
    return problem


def _moments_problem(agreed, mean: float, var: float, tol_mean: float, tol_var: float, what: str) -> str | None:
    if agreed.loss_mean is None or not abs(agreed.loss_mean - mean) <= tol_mean:
        return f"loss mean {agreed.loss_mean!r} but {what} {mean!r} (tolerance {tol_mean:.2g})"
    if agreed.loss_var is None or not abs(agreed.loss_var - var) <= tol_var:
        return f"loss variance {agreed.loss_var!r} but {what} {var!r} (tolerance {tol_var:.2g})"
    return None
