"""The engine's Adam and AdamW state (mpibench/engine/adam.py) against a plain float64 Adam
written here, and the state contract: by global offset, a zero-count step changes nothing,
the rollback restores m, v and t, the handover carries all three.

No MPI: the state is stepped directly with the NumPy back-end, as ``apply_update`` does.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.engine.adam import AdamState
from mpibench.kernels import NumpyBackend
from mpibench.sync.state_handover import hand_over
from fake_comm import FakeComm


def float64_adam(theta, grads, lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, decoupled=False):
    """Textbook Adam (Kingma and Ba; AdamW: Loshchilov and Hutter) in float64, one step per
    gradient; a None gradient is a step nobody contributed to (nothing moves)."""
    theta = np.array(theta, dtype=np.float64)
    m, v, t = np.zeros_like(theta), np.zeros_like(theta), 0
    for g in grads:
        if g is None:
            continue
        g = np.asarray(g, dtype=np.float64) + (0.0 if decoupled else wd * theta)
        t += 1
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        theta = theta - lr * m_hat / (np.sqrt(v_hat) + eps) - (lr * wd * theta if decoupled else 0.0)
    return theta, m, v, t


def step(state, params, view, grad_mean, count, lr):
    """What apply_update hands the optimizer: the gradient *sums* and the total count."""
    sums = (np.asarray(grad_mean, dtype=np.float32) * np.float32(count)).astype(np.float32)
    state.step(NumpyBackend(), params[view], sums, count, lr)


@pytest.mark.parametrize("wd,decoupled", [(0.0, False), (0.05, False), (0.1, True)])
def test_adam_matches_a_float64_adam_to_float32_rounding(wd, decoupled):
    rng = np.random.default_rng(3)
    theta0 = rng.normal(size=64).astype(np.float32)
    grads = [rng.normal(scale=0.1, size=64) for _ in range(12)]
    params = theta0.copy()
    state = AdamState(params, 0.9, 0.999, 1e-8, wd, decoupled)
    for g in grads:
        step(state, params, slice(0, 64), g.astype(np.float32), 8, 0.01)
    theta, m, v, t = float64_adam(theta0, [g.astype(np.float32) for g in grads], 0.01, wd=wd, decoupled=decoupled)
    assert state.counts == {0: t} and t == 12
    (m32, v32), = [s for _, s in state.held()]
    np.testing.assert_allclose(m32, m, rtol=1e-4, atol=1e-8)
    np.testing.assert_allclose(v32, v, rtol=1e-4, atol=1e-10)
    np.testing.assert_allclose(params - theta0, theta - theta0, rtol=1e-3, atol=1e-5)


def test_a_zero_count_step_changes_nothing_and_does_not_count():
    params = np.ones(6, dtype=np.float32)
    state = AdamState(params, 0.9, 0.999, 1e-8)
    step(state, params, slice(0, 6), np.full(6, 0.5), 4, 0.1)
    before, held = params.copy(), [s.copy() for _, s in state.held()]
    state.step(NumpyBackend(), params, np.zeros(6, dtype=np.float32), 0, 0.1)
    assert np.array_equal(params, before) and state.counts == {0: 1}
    assert all(np.array_equal(a, b) for a, (_, b) in zip(held, state.held()))


def test_each_range_holds_its_own_state_and_step_count_by_global_offset():
    params = np.zeros(10, dtype=np.float32)
    state = AdamState(params, 0.9, 0.999, 1e-8)
    step(state, params, slice(0, 4), np.ones(4), 2, 0.1)
    step(state, params, slice(4, 10), np.ones(6), 2, 0.1)
    step(state, params, slice(4, 10), np.ones(6), 2, 0.1)
    assert state.counts == {0: 1, 4: 2} and [o for o, _ in state.held()] == [0, 4]
    assert state.nbytes() == 2 * 10 * 4  # m and v of every element held, float32
    with pytest.raises(RuntimeError, match="re-sharded"):  # [2, 6) overlaps both: state not held here
        step(state, params, slice(2, 6), np.ones(4), 2, 0.1)


def test_the_rollback_restores_m_v_and_t():
    params = np.zeros(5, dtype=np.float32)
    state = AdamState(params, 0.9, 0.999, 1e-8)
    step(state, params, slice(0, 5), np.ones(5), 3, 0.1)
    state.save()
    kept = [s.copy() for _, s in state.held()]
    step(state, params, slice(0, 5), np.full(5, -2.0), 3, 0.1)
    state.restore()
    assert state.counts == {0: 1} and np.array_equal(state.held()[0][1], kept[0])


def test_the_handover_carries_m_v_and_t_and_refuses_to_join_different_step_counts():
    params = np.zeros(10, dtype=np.float32)
    state = AdamState(params, 0.9, 0.999, 1e-8)
    step(state, params, slice(0, 5), np.ones(5), 1, 0.1)
    step(state, params, slice(5, 10), np.full(5, 2.0), 1, 0.1)
    step(state, params, slice(0, 5), np.ones(5), 1, 0.1)  # [0, 5) at t = 2, [5, 10) at t = 1
    with pytest.raises(RuntimeError, match="one step count"):
        hand_over(FakeComm(0, 1, (0,)), NumpyBackend(), state, {0: [(0, 10)]}, [(0, 10)], 54)
    step(state, params, slice(5, 10), np.full(5, 2.0), 1, 0.1)
    m, v = np.concatenate([s[0] for _, s in state.held()]), np.concatenate([s[1] for _, s in state.held()])
    hand_over(FakeComm(0, 1, (0,)), NumpyBackend(), state, {0: [(0, 10)]}, [(0, 10)], 54)
    assert state.counts == {0: 2} and [o for o, _ in state.held()] == [0]
    assert np.array_equal(state.held()[0][1][0], m) and np.array_equal(state.held()[0][1][1], v)


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 5), st.lists(st.floats(-3, 3), min_size=4, max_size=4)),
                min_size=1, max_size=8),
       st.sampled_from([(0.0, False), (0.01, False), (0.1, True)]), st.sampled_from([0.0, 0.5, 0.9]))
def test_the_state_contract_holds_for_any_sequence_of_steps(steps, decay, beta1):
    """Whatever the counts (zero ones included) and gradients: t counts the steps that had
    samples, m and v are the float64 model's to float32 rounding, and the parameters too."""
    wd, decoupled = decay
    theta0 = np.linspace(-1, 1, 4).astype(np.float32)
    params = theta0.copy()
    state = AdamState(params, beta1, 0.999, 1e-8, wd, decoupled)
    grads = []
    for count, g in steps:
        mean = np.array(g, dtype=np.float32)
        step(state, params, slice(0, 4), mean, count, 0.01)
        grads.append((mean * np.float32(count)).astype(np.float32) / np.float32(count) if count else None)
    theta, m, v, t = float64_adam(theta0, grads, 0.01, b1=beta1, wd=wd, decoupled=decoupled)
    assert state.counts.get(0, 0) == t == sum(1 for c, _ in steps if c)
    if t:
        (m32, v32), = [s for _, s in state.held()]
        np.testing.assert_allclose(m32, m, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(v32, v, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(params, theta, rtol=1e-4, atol=1e-5)
