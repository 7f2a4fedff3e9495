"""The step's sync as the worker loop calls it: after the backward pass, or overlapped with it.

One interface for both (:class:`StepSync`), so the loop never knows which strategy runs; it
passes on whether the run overlaps. Without ``--overlap`` the strategy's ``synchronize`` takes the whole
gradient once the backward pass is done, as it always has.

With ``--overlap`` (for a strategy that declares ``overlaps``: a nonblocking form of its
reduction, ``start_bucket`` / ``finish_buckets`` in :mod:`.base`) the step buffer
``[grad_sum..., count]`` is cut into buckets: each layer's slice (weights and bias), cut again
at ``--bucket-bytes``, in the order the backward pass completes the layers (the last layer
first). As soon as a layer's gradients are written, they are copied into its buckets and each
bucket's sum is started; the next layer's backward runs while they are in flight. Every bucket
is waited for before the update, and the mean is formed once, by the global count. The count
travels once: in the bucket that ends the buffer (one of the last layer's, which start first). A
bucket's sum is started through the communicator, so the fault wrapper sees each bucket as one
message (a kill mid-reduction dies with a bucket in flight). The step's Reduction is every
bucket's pieces at their global offsets, so the ``coverage`` invariant sees every bucket; the
checker's reference knows nothing of buckets: the property is the same.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Reduction, SyncStrategy, checked
from .ring import DEFAULT_BUCKET_BYTES


@dataclass(frozen=True)
class Bucket:
    """A slice ``[offset, offset + length)`` of the step buffer, started once ``layer`` is done."""

    offset: int
    length: int
    layer: int  # index into the backward pass's order (Shapes.backward_spans)


def plan_buckets(spans, n_params: int, bucket_elems: int) -> list[Bucket]:
    """The buckets in the order they start: each layer's ``(offset, length)`` span (``spans``, in
    backward order) cut from its start into slices of at most ``bucket_elems``; the span that
    ends the gradient at ``n_params`` takes the count slot with it, so the buckets cover the
    ``n_params + 1`` elements of the step buffer exactly."""
    buckets = []
    for layer, (offset, length) in enumerate(spans):
        end = offset + length + (1 if offset + length == n_params else 0)
        buckets += [Bucket(start, min(bucket_elems, end - start), layer) for start in range(offset, end, bucket_elems)]
    return buckets


def refusal(entry) -> str | None:
    """Why ``--overlap`` cannot run with the strategy of registry ``entry``, or None."""
    from .registry import overlapping

    if getattr(entry.cls, "overlaps", False):
        return None
    return (f"--overlap needs a strategy with a nonblocking reduction ({', '.join(overlapping())}); "
            f"{entry.name} has none")


class StepSync:
    """What the worker loop calls each step: :meth:`begin`, :meth:`layer_done` from inside the
    backward pass, :meth:`finish` after it (the update applied); one per strategy instance."""

    def __init__(self, strategy: SyncStrategy, spans, overlap: bool):
        self.strategy, self.overlap = strategy, overlap
        self._reducing, self._count, self._started = None, 0, []
        if overlap:
            cap = int(strategy.options.get("bucket_bytes") or DEFAULT_BUCKET_BYTES)
            elems = max(1, cap // strategy.buffer.dtype.itemsize)
            self.buckets = plan_buckets(spans, strategy.n_params, elems)

    def begin(self, count: int, reducing) -> None:
        """A step's sync begins: ``count`` samples; ``reducing()`` is called once, just before
        the first message (the loop marks the reduction's start there)."""
        self._reducing, self._count, self._started = reducing, count, []

    def _entered(self) -> None:
        if self._reducing is not None:
            reducing, self._reducing = self._reducing, None
            reducing()

    def layer_done(self, layer: int, grad_sum) -> None:
        """Layer ``layer`` of the backward order holds its gradient in ``grad_sum``: with
        overlap, its buckets are packed and started now."""
        if not self.overlap:
            return
        s = self.strategy
        n = s.n_params
        for b in self.buckets:
            if b.layer != layer:
                continue
            grads = min(b.offset + b.length, n) - b.offset  # the count slot aside
            s.backend.load(s.buffer[b.offset:b.offset + grads], grad_sum[b.offset:b.offset + grads])
            if grads < b.length:
                s.backend.load(s.buffer[n:], np.array([self._count], dtype=s.buffer.dtype))
            self._entered()
            self._started.append(s.start_bucket(b.offset, b.length))

    def finish(self, params, grad_sum, count: int, lr: float) -> Reduction:
        """Every bucket waited for (or, without overlap, the whole sync), the update applied."""
        s = self.strategy
        self._entered()
        if not self.overlap:
            return checked(s, s.synchronize(params, grad_sum, count, lr), "synchronize()")
        parts = [checked(s, r, "finish_buckets()") for r in s.finish_buckets(self._started)]
        self._started = []
        s.backend.apply_update(params, s.buffer[:-1], s.buffer[-1], lr)
        return merged(parts, len(s.buffer))


def merged(parts: list[Reduction], total: int) -> Reduction:
    """The step's Reduction from its buckets': their pieces together, and every worker in any
    bucket's sum (buckets that summed over different members cannot all match the reference)."""
    contributing = dict.fromkeys(w for p in parts for w in p.contributing)
    return Reduction(tuple(contributing), [piece for p in parts for piece in p.pieces], total)
