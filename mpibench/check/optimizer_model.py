"""Which optimizer a case ran, and what the checker's own models of it expect.

The case's config alone says it (``optimizer``: ``sgd``, ``adam`` or ``adamw``, absent
in cases from before it existed: ``sgd``; ``momentum`` above 0 with ``sgd``). Each
stateful optimizer has its model here in the checker, float64, from the reference
gradients: momentum's velocity (:mod:`.momentum`) and Adam's moments and step
count (:mod:`.adam`). The invariants ask this module, never a model by name:
``equivalence`` the direction each update must take, ``optimizer_state`` the state
each worker must hold. A step with an empty union moves nothing and steps no state.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import adam, momentum

EPS32 = float(np.finfo(np.float32).eps)


def kind(case) -> str:
    """``adam``, ``adamw``, ``momentum`` or ``sgd`` (stateless)."""
    name = case.config.get("optimizer", "sgd") or "sgd"
    if name in adam.KINDS:
        return name
    return "momentum" if momentum.factor(case) else "sgd"


def stateful(case) -> bool:
    return kind(case) != "sgd"


@dataclass(frozen=True)
class State:
    """What every holder of a range must hold after a step: each float array's reference value
    and bound (momentum: the velocity; adam: m, then v) and the integers recorded after them
    (adam: the step count), and whether any state exists yet."""

    started: bool
    arrays: list  # [(name, value float64, bound float64)]
    integers: list  # [(name, value)]


def direction(case, step: int, table: dict, grad_bound):
    """``(expected direction, its bound)`` of ``step``'s update (``theta_after = theta_before - lr *
    direction``); the reference gradient and 0 for plain SGD; ``(None, None)`` where a stateful
    chain is broken."""
    due = table[step]
    name = kind(case)
    if name == "sgd":
        return due.ref.grad_mean, 0.0
    if not due.ref.n_samples:  # nothing contributed: nothing applied, no state stepped
        return np.zeros_like(due.ref.grad_mean), 0.0
    if name == "momentum":
        return momentum.direction(case, step, table, grad_bound)
    moments = adam.chain(case, table, grad_bound).get(step)
    if moments is None:
        return None, None
    return moments.direction, moments.direction_bound


def state(case, step: int, table: dict, grad_bound) -> State | None:
    """The state every holder must hold after ``step`` (None: a chain broken before it)."""
    if kind(case) == "momentum":
        v = momentum.chain(case, table, grad_bound).get(step)
        if v is None:
            return None
        return State(bool(np.any(v.value)), [("velocity", v.value, v.bound + EPS32 * np.abs(v.value))], [])
    moments = adam.chain(case, table, grad_bound).get(step)
    if moments is None:
        return None
    return State(moments.t > 0, [("m", moments.m, moments.m_bound), ("v", moments.v, moments.v_bound)],
                 [("step count t", moments.t)])
