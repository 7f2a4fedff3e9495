"""The single-process reference: what one process would compute over the union.

Everything here is its own float64 code, independent of the production model,
kernels and sync strategies (it imports none of them). It rebuilds the union
of the contributing batches from the raw data by sample index and computes the
mean-loss gradient over it directly, in its own summation order.

Steps are independent once their starting parameters are known, so many are
computed at once (:func:`reference_steps`): each step is one slice of a stack,
its union padded to the longest one with samples that a mask keeps out of every
sum. One step alone is the same computation with a stack of one.
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


def _unflatten(theta: np.ndarray, n_features: int, hidden: int, n_classes: int):
    """Stacked flat parameters ``(S, P)`` -> stacked ``w1, b1, w2, b2`` views."""
    sizes = [n_features * hidden, hidden, hidden * n_classes, n_classes]
    cuts = np.cumsum([0] + sizes)
    s = theta.shape[0]
    w1 = theta[:, cuts[0]:cuts[1]].reshape(s, n_features, hidden)
    b1 = theta[:, None, cuts[1]:cuts[2]]
    w2 = theta[:, cuts[2]:cuts[3]].reshape(s, hidden, n_classes)
    b2 = theta[:, None, cuts[3]:cuts[4]]
    return w1, b1, w2, b2


def reference_step(params, features, labels, union_indices, hidden: int, n_classes: int) -> ReferenceStep:
    """Mean-loss gradient over the samples ``union_indices`` of the raw data."""
    return reference_steps([params], features, labels, [union_indices], hidden, n_classes)[0]


CHUNK = 128  # steps stacked in one pass (bounds the memory of the padded stacks)


def reference_steps(befores, features, labels, unions, hidden: int, n_classes: int) -> list[ReferenceStep]:
    """:func:`reference_step` for many (parameters, union) pairs at once, in order."""
    out: list[ReferenceStep] = []
    for start in range(0, len(befores), CHUNK):
        out += _chunk(befores[start:start + CHUNK], features, labels, unions[start:start + CHUNK], hidden, n_classes)
    return out


def _chunk(befores, features, labels, unions, hidden: int, n_classes: int) -> list[ReferenceStep]:
    theta = np.stack([np.asarray(b, dtype=np.float64) for b in befores])
    w1, b1, w2, b2 = _unflatten(theta, features.shape[1], hidden, n_classes)
    idx = [np.asarray(u, dtype=np.int64) for u in unions]
    counts = np.array([len(i) for i in idx])
    width = max(1, int(counts.max(initial=0)))
    mask = np.arange(width)[None, :] < counts[:, None]  # (S, N): real samples
    padded = np.zeros((len(idx), width), dtype=np.int64)
    for k, i in enumerate(idx):
        padded[k, :len(i)] = i
    x = features[padded].astype(np.float64) * mask[..., None]
    onehot = np.eye(n_classes)[labels[padded]] * mask[..., None]
    with np.errstate(all="ignore"):  # non-finite parameters give non-finite references: judged, not warned
        grads, abs_grads, losses = _gradients(x, onehot, mask, w1, b1, w2, b2)
    n = np.maximum(counts, 1)[:, None]
    grad_mean = np.concatenate([g.reshape(len(idx), -1) for g in grads], axis=1) / n
    grad_abs = np.concatenate([g.reshape(len(idx), -1) for g in abs_grads], axis=1) / n
    return [ReferenceStep(grad_mean[k], grad_abs[k], losses[k, :counts[k]], int(counts[k]))
            for k in range(len(idx))]


def _gradients(x, onehot, mask, w1, b1, w2, b2):
    """Stacked per-step gradient sums, their rounding-error bounds and per-sample losses."""
    keep = mask[..., None]
    pre = x @ w1 + b1
    act = np.tanh(pre)
    scores = act @ w2 + b2
    shift = scores.max(axis=2)
    log_norm = shift + np.log(np.exp(scores - shift[..., None]).sum(axis=2))
    losses = log_norm - (scores * onehot).sum(axis=2)

    probs = np.exp(scores - log_norm[..., None])
    d_scores = (probs - onehot) * keep  # per sample, before the 1/n of the mean; padding out
    slope = 1.0 - act**2
    w2t = np.swapaxes(w2, 1, 2)
    d_pre = (d_scores @ w2t) * slope
    grads = [np.swapaxes(x, 1, 2) @ d_pre, d_pre.sum(1), np.swapaxes(act, 1, 2) @ d_scores, d_scores.sum(1)]
    # A first-order bound on the float32 rounding error of each gradient element, summed over
    # samples: every intermediate is replaced by the sum of the magnitudes of its terms (forward
    # and backward), so cancellation inside a product cannot hide error that float32 makes
    # there. Outer products make this exact per sample without per-sample gradients.
    abs_x, abs_w2t = np.abs(x), np.abs(w2t)
    m_pre = abs_x @ np.abs(w1) + np.abs(b1)
    m_act = np.abs(act) + m_pre * slope
    m_scores = m_act @ np.abs(w2) + np.abs(b2)
    abs_ds = np.abs(d_scores)
    m_ds = (abs_ds + m_scores) * keep
    m_dpre = (m_ds @ abs_w2t) * slope + (abs_ds @ abs_w2t) * 2 * np.abs(act) * m_pre
    abs_grads = [np.swapaxes(abs_x, 1, 2) @ m_dpre, m_dpre.sum(1), np.swapaxes(m_act, 1, 2) @ m_ds, m_ds.sum(1)]
    return grads, abs_grads, losses
