"""The float32 production model against the independent float64 reference."""
import numpy as np
import pytest

from mpibench.engine.data import make_dataset
from mpibench.engine.model import MLP, Shapes, init_params, layer_views
from mpibench.check.reference import reference_step


@pytest.fixture
def setup():
    shapes = Shapes(6, 5, 3)
    data = make_dataset(1, 40, 6, 3)
    return shapes, data, init_params(1, shapes)


def test_views_share_memory(setup):
    shapes, _, params = setup
    views = layer_views(params, shapes)
    views[0][0, 0] = 42.0
    assert params[0] == 42.0
    assert sum(v.size for v in views) == shapes.n_params


@pytest.mark.parametrize("n", [1, 2, 17, 40])
def test_grad_sum_matches_reference_mean_times_count(setup, n):
    shapes, data, params = setup
    idx = np.arange(n)
    grad_sum, count, losses = MLP(shapes).loss_and_grad_sum(params, data.features[idx], data.labels[idx])
    ref = reference_step(params, data.features, data.labels, idx, shapes.hidden, shapes.n_classes)
    assert count == n == ref.n_samples
    np.testing.assert_allclose(grad_sum, ref.grad_mean * n, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(losses, ref.losses, rtol=1e-5)
    assert (ref.grad_abs_mean >= np.abs(ref.grad_mean) - 1e-12).all()


def test_reference_gradient_by_finite_differences(setup):
    shapes, data, params = setup
    idx = np.arange(10)
    theta = params.astype(np.float64)
    ref = reference_step(theta, data.features, data.labels, idx, shapes.hidden, shapes.n_classes)
    h = 1e-6
    for i in [0, 7, shapes.n_params - 1, shapes.n_params // 2]:
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        f = lambda t: reference_step(t, data.features, data.labels, idx, shapes.hidden, shapes.n_classes).losses.mean()
        assert abs((f(up) - f(down)) / (2 * h) - ref.grad_mean[i]) < 1e-6


def test_empty_batch(setup):
    shapes, data, params = setup
    grad_sum, count, losses = MLP(shapes).loss_and_grad_sum(params, data.features[:0], data.labels[:0])
    assert count == 0 and not grad_sum.any() and len(losses) == 0
