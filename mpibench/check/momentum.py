"""The checker's own model of SGD momentum: the reference velocity, step by step.

With ``momentum`` MU in the case's config, a committed step applies
``theta_after = theta_before - lr * v`` with ``v = MU * v_prev + g`` and ``g``
the reference mean gradient over the step's union (a step with an empty union
changes neither the parameters nor ``v``). ``v_prev`` is this model's velocity
after the previous committed step (zero before the first), built in float64
from the reference gradients alone, never from a worker's recorded state.

Each velocity carries a bound on how far a float32 worker's own velocity may
be from it: the gradient's float32 rounding bound (the same first-order bound
the equivalence check uses for one step), decayed by MU each step, plus the
rounding of the multiply and the add. Without a reference for some committed
step (the online check thins them) the chain is broken and every later
velocity is unknown (None): never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import statechain

NAME = "momentum"
EPS32 = float(np.finfo(np.float32).eps)


@dataclass(frozen=True)
class Velocity:
    """The reference velocity after a committed step and the float32 distance allowed from it."""

    value: np.ndarray  # float64
    bound: np.ndarray  # float64, per element


def factor(case) -> float:
    return float(case.config.get("momentum", 0.0) or 0.0)


def chain(case, table: dict, grad_bound) -> dict:
    """``step -> Velocity`` (or None once the chain breaks) over the committed steps in order.

    ``table[step].ref`` is the step's reference (None: not computed); ``grad_bound(view, ref)``
    is the float32 rounding bound of its mean gradient."""
    mu, n = factor(case), len(case.initial_params)

    def advance(current, view, due):
        ref = due.ref
        value = mu * current.value + ref.grad_mean
        bound = mu * current.bound + grad_bound(view, ref) + 2 * EPS32 * (mu * np.abs(current.value) + np.abs(value))
        return Velocity(value, bound)

    return statechain.walk(case, table, NAME, Velocity(np.zeros(n), np.zeros(n)), advance, lambda current: current)


def direction(case, step: int, table: dict, grad_bound):
    """``(expected velocity, its bound)`` of ``step`` (the reference gradient and 0 without momentum);
    ``(None, None)`` where the chain is broken."""
    due = table[step]
    if not factor(case):
        return due.ref.grad_mean, 0.0
    v = chain(case, table, grad_bound).get(step)
    if v is None:
        return None, None
    return v.value, v.bound + EPS32 * np.abs(v.value)
