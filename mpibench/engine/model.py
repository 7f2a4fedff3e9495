"""A small MLP classifier in float32 whose parameters live in one flat vector.

Layers are views into the flat vector, so a whole model is synchronised,
snapshotted and compared as one contiguous buffer. The backward pass returns
the gradient *sum* over the local batch (not the mean) together with the
sample count: dividing happens once, after the reduction, by the global count.
The backward computes the last layer's gradients first and can say when each
layer is done, so a sync can start a layer's bucket while the next one computes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpibench.base import seeds


@dataclass(frozen=True)
class Shapes:
    n_features: int
    hidden: int
    n_classes: int

    def layer_shapes(self) -> list[tuple[int, ...]]:
        f, h, c = self.n_features, self.hidden, self.n_classes
        return [(f, h), (h,), (h, c), (c,)]

    @property
    def n_params(self) -> int:
        return sum(int(np.prod(s)) for s in self.layer_shapes())

    def backward_spans(self) -> list[tuple[int, int]]:
        """Each layer's ``(offset, length)`` in the flat vector (weights and bias together), in
        the order the backward pass completes them: the last layer first."""
        f, h, c = self.n_features, self.hidden, self.n_classes
        return [(f * h + h, h * c + c), (0, f * h + h)]


def layer_views(flat: np.ndarray, shapes: Shapes) -> list[np.ndarray]:
    """Views ``[W1, b1, W2, b2]`` into ``flat`` (no copies)."""
    views, offset = [], 0
    for shape in shapes.layer_shapes():
        size = int(np.prod(shape))
        views.append(flat[offset:offset + size].reshape(shape))
        offset += size
    return views


def init_params(seed: int, shapes: Shapes) -> np.ndarray:
    """Identical initial weights on every rank, drawn from the run seed."""
    rng = seeds.generator(seed, seeds.MODEL)
    flat = np.zeros(shapes.n_params, dtype=np.float32)
    w1, _, w2, _ = layer_views(flat, shapes)
    w1[...] = rng.normal(0, 1 / np.sqrt(shapes.n_features), size=w1.shape)
    w2[...] = rng.normal(0, 1 / np.sqrt(shapes.hidden), size=w2.shape)
    return flat


class MLP:
    """Forward and backward passes writing into buffers allocated once."""

    def __init__(self, shapes: Shapes):
        self.shapes = shapes
        self.grad_sum = np.zeros(shapes.n_params, dtype=np.float32)
        self._grad_views = layer_views(self.grad_sum, shapes)

    def loss_and_grad_sum(self, params: np.ndarray, x: np.ndarray, y: np.ndarray, layer_done=None):
        """Per-sample losses; the gradient sum lands in ``self.grad_sum``.

        Returns ``(grad_sum, count, losses)``. An empty batch gives a zero
        gradient, count 0 and no losses. ``layer_done(i)``, if given, is called as
        soon as layer ``i`` of :meth:`Shapes.backward_spans` holds its gradient, before
        the next layer's backward runs (an overlapped sync starts its bucket there).
        """
        w1, b1, w2, b2 = layer_views(params, self.shapes)
        gw1, gb1, gw2, gb2 = self._grad_views
        done = layer_done or (lambda i: None)
        count = len(y)
        if count == 0:
            self.grad_sum.fill(0)
            done(0)
            done(1)
            return self.grad_sum, 0, np.zeros(0, dtype=np.float32)
        hidden = np.tanh(x @ w1 + b1)
        logits = hidden @ w2 + b2
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        total = exp.sum(axis=1, keepdims=True)
        losses = np.log(total[:, 0]) - logits[np.arange(count), y]
        dlogits = exp / total
        dlogits[np.arange(count), y] -= 1.0
        np.matmul(hidden.T, dlogits, out=gw2)
        np.sum(dlogits, axis=0, out=gb2)
        done(0)
        dhidden = (dlogits @ w2.T) * (1.0 - hidden * hidden)
        np.matmul(x.T, dhidden, out=gw1)
        np.sum(dhidden, axis=0, out=gb1)
        done(1)
        return self.grad_sum, count, losses.astype(np.float32)
