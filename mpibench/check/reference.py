"""The single-process reference: what one process would compute over the union.

Everything here is its own float64 code, independent of the production model,
kernels and sync strategies (it imports none of them). It rebuilds the union
of the contributing batches from the raw data by sample index and computes the
mean-loss gradient over it directly, in its own summation order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ReferenceStep:
    grad_mean: np.ndarray  # float64, flat, same layout as the parameters
    grad_abs_mean: np.ndarray  # float64: mean over samples of a per-sample rounding-error magnitude
    losses: np.ndarray  # float64 per-sample losses of the union
    n_samples: int


def _unflatten(flat: np.ndarray, n_features: int, hidden: int, n_classes: int):
    sizes = [n_features * hidden, hidden, hidden * n_classes, n_classes]
    cuts = np.cumsum([0] + sizes)
    w1 = flat[cuts[0]:cuts[1]].reshape(n_features, hidden)
    b1 = flat[cuts[1]:cuts[2]]
    w2 = flat[cuts[2]:cuts[3]].reshape(hidden, n_classes)
    b2 = flat[cuts[3]:cuts[4]]
    return w1, b1, w2, b2


def reference_step(params, features, labels, union_indices, hidden: int, n_classes: int) -> ReferenceStep:
    """Mean-loss gradient over the samples ``union_indices`` of the raw data."""
    theta = np.asarray(params, dtype=np.float64)
    n_features = features.shape[1]
    w1, b1, w2, b2 = _unflatten(theta, n_features, hidden, n_classes)
    idx = np.asarray(union_indices, dtype=np.int64)
    n = len(idx)
    if n == 0:
        zero = np.zeros_like(theta)
        return ReferenceStep(zero, zero.copy(), np.zeros(0), 0)
    x = features[idx].astype(np.float64)
    onehot = np.eye(n_classes)[labels[idx]]

    pre = np.einsum("nf,fh->nh", x, w1) + b1
    act = np.tanh(pre)
    scores = np.einsum("nh,hc->nc", act, w2) + b2
    shift = scores.max(axis=1)
    log_norm = shift + np.log(np.exp(scores - shift[:, None]).sum(axis=1))
    losses = log_norm - (scores * onehot).sum(axis=1)

    probs = np.exp(scores - log_norm[:, None])
    d_scores = probs - onehot  # per sample, before the 1/n of the mean
    d_pre = np.einsum("nc,hc->nh", d_scores, w2) * (1.0 - act**2)

    grads = [np.einsum("nf,nh->fh", x, d_pre), d_pre.sum(0),
             np.einsum("nh,nc->hc", act, d_scores), d_scores.sum(0)]
    # A first-order bound on the float32 rounding error of each gradient element, summed over
    # samples: every intermediate is replaced by the sum of the magnitudes of its terms (forward
    # and backward), so cancellation inside a product cannot hide error that float32 makes
    # there. Outer products make this exact per sample without per-sample gradients.
    m_pre = np.abs(x) @ np.abs(w1) + np.abs(b1)
    m_act = np.abs(act) + m_pre * (1.0 - act**2)
    m_scores = m_act @ np.abs(w2) + np.abs(b2)
    m_ds = np.abs(d_scores) + m_scores
    m_dpre = (m_ds @ np.abs(w2).T) * (1.0 - act**2) + (np.abs(d_scores) @ np.abs(w2).T) * 2 * np.abs(act) * m_pre
    abs_grads = [np.abs(x).T @ m_dpre, m_dpre.sum(0), m_act.T @ m_ds, m_ds.sum(0)]
    grad_mean = np.concatenate([g.ravel() for g in grads]) / n
    grad_abs = np.concatenate([g.ravel() for g in abs_grads]) / n
    return ReferenceStep(grad_mean, grad_abs, losses, n)
