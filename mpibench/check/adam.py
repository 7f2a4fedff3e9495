"""The checker's own model of Adam and AdamW: the reference moments, step count and update.

With ``optimizer`` ``adam`` or ``adamw`` in the case's config (and ``beta1``,
``beta2``, ``adam_eps``, ``weight_decay``, all read from the case alone), every
committed step with a non-empty union applies, in exact arithmetic::

    t = t_prev + 1;  g = ref.grad_mean (+ wd theta_before for adam: L2 in the gradient)
    m = b1 m_prev + (1 - b1) g;      v = b2 v_prev + (1 - b2) g^2
    d = sqrt(v / (1 - b2^t)) + eps;  u = m / ((1 - b1^t) d)
    theta_after = theta_before - lr (u + wd theta_before)          (the wd term: adamw only)

and a step with an empty union changes nothing, ``t`` included. ``m``, ``v`` and
``t`` are built here in float64 from the reference gradients alone (each at the
parameters the step really started from), never from a worker's recorded state.

The bound: how far a float32 worker may be from these values, element by element.
Let ``e`` be float32's epsilon (twice the unit roundoff), so that one float32
operation whose float32 operand is a rounded float64 constant is off by at most
``e |result|``; ``E_x`` bounds ``|x_float32 - x|``. First order in ``e``
(products of two error terms dropped, except ``E_g^2`` in ``v``):

* gradient: ``E_g = K e mean|g_i| + e |g|`` (the equivalence check's bound for one
  mean gradient, plus the division by the count); adam's L2 term adds ``e (wd |theta| + |g|)``;
* first moment: ``E_m = b1 E_m' + (1 - b1) E_g + e (b1 |m'| + (1 - b1) |g| + |m|)``;
* second moment: ``E_v = b2 E_v' + (1 - b2) (2 |g| E_g + E_g^2) + e (b2 v' + 2 (1 - b2) g^2 + v)``;
* the root: ``|sqrt(v~) - sqrt(v)| <= min(E_v / sqrt(v), sqrt(E_v))`` (exact for any
  ``v~ >= 0``), so ``E_d = min(E_v / sqrt(v), sqrt(E_v)) / sqrt(1 - b2^t) + e (2 sqrt(v_hat) + d)``;
* the division amplifies: with ``d_low = max(d - E_d, eps (1 - e))`` (a float32
  ``d`` is never below the float32 ``eps``), ``|m~/d~ - m/d| <= E_m / d_low + |m| E_d / (d d_low)``,
  so ``E_u = (E_m / d_low + |m| E_d / (d d_low)) / (1 - b1^t) + 2 e |u|`` (the division,
  and ``lr / (1 - b1^t)`` rounded and multiplied);
* adamw's decay adds ``e wd |theta_before|`` (``lr wd`` rounded and multiplied).

Where ``v`` is small next to its error the bound grows as ``E_m / eps``: an element
whose gradient is all rounding noise may move anywhere Adam's normalisation takes
it, and the bound says so instead of hiding it. The equivalence check adds the
final subtraction's rounding (``2 e (|theta_before| + |theta_after|)``), as for SGD.
Without a reference for some committed step (the online check thins them) the chain
is broken and every later state is unknown (None): never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import statechain

NAME = "adam"
EPS32 = float(np.finfo(np.float32).eps)
KINDS = ("adam", "adamw")


@dataclass(frozen=True)
class Moments:
    """The reference state after a committed step, the float32 distance allowed from it, and the
    step's update direction (``theta_after = theta_before - lr * direction``) with its bound."""

    t: int
    m: np.ndarray  # float64, per element
    v: np.ndarray
    m_bound: np.ndarray
    v_bound: np.ndarray
    direction: np.ndarray
    direction_bound: np.ndarray


def applies(case) -> bool:
    return case.config.get("optimizer", "sgd") in KINDS


def settings(case) -> tuple[float, float, float, float, bool]:
    """``(beta1, beta2, eps, weight decay, decoupled)`` as the case's config records them."""
    c = case.config
    return (float(c.get("beta1", 0.9)), float(c.get("beta2", 0.999)), float(c.get("adam_eps", 1e-8)),
            float(c.get("weight_decay", 0.0) or 0.0), c.get("optimizer") == "adamw")


def chain(case, table: dict, grad_bound) -> dict:
    """``step -> Moments`` (or None once the chain breaks) over the committed steps in order.

    ``table[step]`` holds the step's ``before`` parameters and its reference ``ref`` (None: not
    computed); ``grad_bound(view, ref)`` is the float32 rounding bound of its mean gradient."""
    n = len(case.initial_params)

    def advance(current, view, due):
        ref = due.ref
        return step(case, current, ref.grad_mean, grad_bound(view, ref), due.before.astype(np.float64))

    def idle(current):  # nothing contributed: nothing moves, t included
        return Moments(current.t, current.m, current.v, current.m_bound, current.v_bound, np.zeros(n), np.zeros(n))

    return statechain.walk(case, table, NAME, Moments(0, *(np.zeros(n) for _ in range(6))), advance, idle)


def step(case, prev: Moments, grad: np.ndarray, grad_bound: np.ndarray, theta: np.ndarray) -> Moments:
    """One step of the model from ``prev`` with reference gradient ``grad`` at ``theta``."""
    b1, b2, eps, wd, decoupled = settings(case)
    e = EPS32
    g, eg = grad, grad_bound + e * np.abs(grad)
    if wd and not decoupled:  # adam's L2: the decay joins the gradient
        g = grad + wd * theta
        eg = eg + e * (wd * np.abs(theta) + np.abs(g))
    t = prev.t + 1
    m = b1 * prev.m + (1 - b1) * g
    v = b2 * prev.v + (1 - b2) * g * g
    em = b1 * prev.m_bound + (1 - b1) * eg + e * (b1 * np.abs(prev.m) + (1 - b1) * np.abs(g) + np.abs(m))
    ev = (b2 * prev.v_bound + (1 - b2) * (2 * np.abs(g) * eg + eg * eg)
          + e * (b2 * prev.v + 2 * (1 - b2) * g * g + v))
    bias1, bias2 = 1.0 - b1 ** t, 1.0 - b2 ** t
    root = np.sqrt(v)
    with np.errstate(divide="ignore", invalid="ignore"):
        e_root = np.where(root > 0, np.minimum(ev / np.where(root > 0, root, 1.0), np.sqrt(ev)), np.sqrt(ev))
    d = root / np.sqrt(bias2) + eps
    ed = e_root / np.sqrt(bias2) + e * (2 * root / np.sqrt(bias2) + d)
    d_low = np.maximum(d - ed, eps * (1 - e))
    u = m / (bias1 * d)
    eu = (em / d_low + np.abs(m) * ed / (d * d_low)) / bias1 + 2 * e * np.abs(u)
    if wd and decoupled:  # adamw: theta -= lr wd theta, apart from the moments
        u, eu = u + wd * theta, eu + e * wd * np.abs(theta)
    return Moments(t, m, v, em, ev, u, eu)
