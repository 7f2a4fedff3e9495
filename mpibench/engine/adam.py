"""Adam and AdamW state (``--optimizer adam|adamw``), held as slices like momentum's velocity.

Each range a rank steps keeps its first moment ``m``, its second moment ``v``
and its own step count ``t``, by global offset (:class:`~.state_slices.SlicedState`:
a sharded strategy holds only its shard's). A step with gradient
``g = sums / count``, all in float32, in place, in arrays allocated once per range::

    t <- t + 1
    g <- g + wd theta                       (adam with --weight-decay: L2 in the gradient)
    m <- b1 m + (1 - b1) g
    v <- b2 v + (1 - b2) g^2
    theta <- theta - lr wd theta            (adamw: decoupled decay)
    theta <- theta - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)

which is ``theta -= lr m_hat / (sqrt(v_hat) + eps)`` with ``m_hat = m / (1 - b1^t)``
and ``v_hat = v / (1 - b2^t)``. The scalars (``1 - b1``, the bias corrections and
their roots, ``lr / (1 - b1^t)``) are formed in float64 and rounded once to
float32. A step whose total count is zero changes nothing and does not count.
"""
from __future__ import annotations

import math

import numpy as np

from .state_slices import SlicedState


class AdamState(SlicedState):
    """``m`` and ``v`` (one ``2 x length`` float32 array) and ``t`` of every range this rank steps."""

    name = "adam"
    rows = 3  # handed over as m, v and t (float32: exact for any t below 2**24)

    def __init__(self, params: np.ndarray, beta1: float, beta2: float, eps: float, weight_decay: float = 0.0,
                 decoupled: bool = False):
        super().__init__(params)
        self.beta1, self.beta2, self.weight_decay = float(beta1), float(beta2), float(weight_decay)
        self.decoupled, self.name = decoupled, "adamw" if decoupled else "adam"
        self.b1, self.b2 = np.float32(beta1), np.float32(beta2)
        self.c1, self.c2 = np.float32(1.0 - self.beta1), np.float32(1.0 - self.beta2)
        self.eps, self.wd = np.float32(eps), np.float32(weight_decay)
        self.counts: dict[int, int] = {}  # global offset -> t of that range
        self._saved_counts: dict[int, int] = {}
        self._scratch: dict[int, np.ndarray] = {}  # global offset -> 2 x length float32 work space

    def step(self, backend, params_view, sums, count, lr: float) -> None:
        """One Adam (AdamW) step of the range of ``params_view`` from ``sums / count``."""
        total = float(count)  # host memory only (refusal() names --device)
        if not total or not len(params_view):
            return
        offset, n = self.offset_of(params_view), len(params_view)
        state = self.slices.get(offset)
        if state is None or state.shape[1] != n:
            state = self.slices[offset] = self._fresh(offset, n, (2,))
            self.counts[offset] = 0
        work = self._scratch.get(offset)
        if work is None or work.shape[1] != n:
            work = self._scratch[offset] = np.empty((2, n), dtype=np.float32)
        m, v = state
        g, tmp = work
        t = self.counts[offset] + 1
        np.divide(np.asarray(backend.to_host(sums), dtype=np.float32), np.float32(total), out=g)
        if self.weight_decay and not self.decoupled:  # Adam's L2: the decay joins the gradient
            np.multiply(params_view, self.wd, out=tmp)
            np.add(g, tmp, out=g)
        np.multiply(m, self.b1, out=m)
        np.multiply(g, self.c1, out=tmp)
        np.add(m, tmp, out=m)
        np.multiply(v, self.b2, out=v)
        np.multiply(g, g, out=tmp)
        np.multiply(tmp, self.c2, out=tmp)
        np.add(v, tmp, out=v)
        bias1, bias2 = self.corrections(t)
        np.sqrt(v, out=tmp)
        np.multiply(tmp, np.float32(1.0 / math.sqrt(bias2)), out=tmp)
        np.add(tmp, self.eps, out=tmp)
        np.divide(m, tmp, out=tmp)
        np.multiply(tmp, np.float32(lr / bias1), out=tmp)
        if self.weight_decay and self.decoupled:  # AdamW: theta -= lr wd theta, apart from the moments
            np.multiply(params_view, np.float32(lr * self.weight_decay), out=g)
            np.subtract(params_view, g, out=params_view)
        np.subtract(params_view, tmp, out=params_view)
        self.counts[offset] = t

    def corrections(self, t: int) -> tuple[float, float]:
        """The bias corrections ``(1 - b1^t, 1 - b2^t)`` of step ``t``, in float64."""
        return 1.0 - self.beta1 ** t, 1.0 - self.beta2 ** t

    def save(self) -> None:
        super().save()
        self._saved_counts = dict(self.counts)

    def restore(self) -> None:
        super().restore()
        self.counts = dict(self._saved_counts)

    def held_rows(self) -> list[tuple[int, np.ndarray]]:
        return [(o, np.vstack([s, np.full((1, s.shape[1]), self.counts.get(o, 0), dtype=np.float32)]))
                for o, s in self.held()]

    def take_rows(self, rows: dict) -> None:
        """Hold ``rows`` (offset -> m, v, t rows); every element of a range must carry the same t."""
        slices, counts = {}, {}
        for o, r in rows.items():
            steps = np.unique(r[2])
            if len(steps) != 1 or steps[0] != int(steps[0]):
                raise RuntimeError(f"adam: the state handed over for [{o}, {o + r.shape[1]}) joins ranges "
                                   f"stepped {sorted(steps.tolist())[:4]} times; one range has one step count")
            slices[o], counts[o] = np.array(r[:2], dtype=np.float32), int(steps[0])
        self.slices, self.counts = slices, counts

    def fields(self) -> list[tuple[int, list, list]]:
        return [(o, [s[0], s[1]], [self.counts.get(o, 0)]) for o, s in self.held()]
