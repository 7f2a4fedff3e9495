"""The checker's own Adam model (mpibench/check/adam.py): its float32 bound against a float32
Adam written here, not the production one. It must hold for honest rounding (any gradient
scale, eps, with and without AdamW's decay) and be tight enough that each known-bad variant
(no bias correction, beta1 for beta2, the step count advanced twice, AdamW without its decay)
falls outside it. The runs the checker judges with it: tests/test_optimizer_check.py.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.check import adam as model

F = np.float32


def float32_direction(m, v, g, t, b1, b2, eps, *, bias=True, beta2=None):
    """One float32 Adam step at step count ``t`` as a worker might write it (not the production
    code): the new ``m``, ``v`` and ``lr``-free update; ``bias`` and ``beta2`` plant variants."""
    b2 = b2 if beta2 is None else beta2
    m = (F(b1) * m + F(1 - b1) * g).astype(F)
    v = (F(b2) * v + (F(1 - b2) * (g * g)).astype(F)).astype(F)
    c1, c2 = (1 - b1 ** t, 1 - b2 ** t) if bias else (1.0, 1.0)
    u = ((m / (np.sqrt(v) * F(1 / np.sqrt(c2)) + F(eps))) * F(1 / c1)).astype(F)
    return m, v, u


def case(optimizer="adam", wd=0.0, b1=0.9, b2=0.999, eps=1e-8):
    return SimpleNamespace(config={"optimizer": optimizer, "beta1": b1, "beta2": b2, "adam_eps": eps,
                                   "weight_decay": wd})


def run_chain(c, grads, noise, theta, **variant):
    """The worst share of the model's bound that a float32 worker's m, v and update take over
    ``grads``; each gradient reaches the worker off by ``noise`` (inside the bound the model is
    given); ``t_step`` 2 advances the worker's step count twice per step."""
    variant = dict(variant)
    t_step = variant.pop("t_step", 1)
    b1, b2, eps, wd, decoupled = model.settings(c)
    n = len(grads[0])
    prev = model.Moments(0, *[np.zeros(n)] * 6)
    m32, v32, worst = np.zeros(n, F), np.zeros(n, F), {"m": 0.0, "v": 0.0, "u": 0.0}
    for k, g in enumerate(grads):
        bound = np.abs(g) * noise + 1e-12
        got = (g + noise * np.abs(g) * np.sin(np.arange(n) + k)).astype(F)  # an error inside the bound
        prev = model.step(c, prev, g, bound, theta)
        t = (k + 1) * t_step
        m32, v32, u32 = float32_direction(m32, v32, got, t, b1, b2, eps, **variant)
        if decoupled:  # AdamW's decay, theta -= lr wd theta, as the direction holds it
            u32 = u32 + wd * theta.astype(F).astype(np.float64)
        for name, have, want, allowed in (("m", m32, prev.m, prev.m_bound), ("v", v32, prev.v, prev.v_bound),
                                          ("u", u32, prev.direction, prev.direction_bound)):
            worst[name] = max(worst[name], float(np.max(np.abs(have - want) / allowed)))
    return worst


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.sampled_from([("adam", 0.0), ("adamw", 0.1)]),
       st.sampled_from([1e-7, 1e-5]), st.sampled_from([1e-8, 1e-3]))
def test_the_bound_holds_for_honest_float32_rounding(seed, kind, noise, eps):
    rng = np.random.default_rng(seed)
    grads = [rng.normal(scale=10.0 ** rng.uniform(-6, 0), size=32) for _ in range(6)]
    worst = run_chain(case(kind[0], kind[1], eps=eps), grads, noise, rng.normal(size=32))
    assert max(worst.values()) <= 1, worst


@pytest.mark.parametrize("variant,caught", [
    ({"bias": False}, {"u"}),  # m and v right, the update not
    ({"beta2": 0.9}, {"v", "u"}),
    ({"t_step": 2}, {"u"}),  # t itself is judged exactly by optimizer_state
])
def test_the_bound_is_tight_enough_to_catch_each_known_bad_adam(variant, caught):
    rng = np.random.default_rng(5)
    grads = [rng.normal(scale=0.01, size=64) for _ in range(6)]
    worst = run_chain(case(), grads, 1e-5, rng.normal(size=64), **variant)
    assert {name for name, ratio in worst.items() if ratio > 1} == caught, worst


def test_adamw_without_its_decay_is_outside_the_bound():
    rng = np.random.default_rng(6)
    grads = [rng.normal(scale=0.01, size=64) for _ in range(3)]
    c = case("adamw", 0.1)
    theta = rng.normal(size=64)
    prev = model.step(c, model.Moments(0, *[np.zeros(64)] * 6), grads[0], 1e-7 * np.abs(grads[0]), theta)
    _, _, u = float32_direction(np.zeros(64, F), np.zeros(64, F), grads[0].astype(F), 1, 0.9, 0.999, 1e-8)
    assert np.max(np.abs(u - prev.direction) / prev.direction_bound) > 100
