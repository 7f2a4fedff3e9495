"""Cutting a flat buffer into pieces that are named by their global offset.

Both hand-written strategies move a buffer in pieces: the ring cuts it into
buckets (a size cap, as DDP does) and each bucket into one segment per rank;
the parameter server cuts it into server shards. A piece is always the pair
``(global offset, length)`` into the whole buffer, never a position relative
to its bucket, so the pieces a strategy moved can be checked against the
``reassemble`` contract (``aggregate.check_pieces``) and by the ``coverage``
invariant without knowing how the strategy cut them.

Widths are allowed to differ: a length not divisible by the number of parts
gives the first ``length % parts`` parts one extra element, and fewer
elements than parts gives zero-length parts at the end.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpibench.base.aggregate import check_pieces


def split_widths(length: int, parts: int) -> np.ndarray:
    """Widths of ``parts`` consecutive parts covering ``length`` elements."""
    if parts < 1 or length < 0:
        raise ValueError(f"cannot split {length} elements into {parts} parts")
    widths = np.full(parts, length // parts, dtype=np.int64)
    widths[: length % parts] += 1
    return widths


def offsets_of(widths: np.ndarray, start: int = 0) -> np.ndarray:
    """Global offsets of consecutive parts of the given widths, starting at ``start``."""
    offsets = np.empty(len(widths), dtype=np.int64)
    offsets[0:1] = start
    np.cumsum(widths[:-1], out=offsets[1:])
    offsets[1:] += start
    return offsets


@dataclass(frozen=True)
class SegmentPlan:
    """Buckets of a buffer, each cut into ``parts`` segments.

    ``offsets[b, i]`` and ``widths[b, i]`` are the global offset and length of
    segment ``i`` of bucket ``b``. ``total`` is the length of the whole buffer.
    """

    offsets: np.ndarray  # (buckets, parts) int64
    widths: np.ndarray  # (buckets, parts) int64
    total: int

    @property
    def buckets(self) -> int:
        return self.offsets.shape[0]

    @property
    def parts(self) -> int:
        return self.offsets.shape[1]

    def pieces(self) -> list[tuple[int, int]]:
        """Every segment as ``(global offset, length)``, bucket by bucket."""
        return list(zip(self.offsets.ravel().tolist(), self.widths.ravel().tolist()))

    def covers(self) -> bool:
        """True when the segments cover ``[0, total)`` exactly once."""
        return check_pieces(self.offsets.ravel().tolist(), self.widths.ravel().tolist(), self.total)

    def max_width(self) -> np.ndarray:
        """The widest segment of each bucket (scratch space for one received segment)."""
        return self.widths.max(axis=1) if self.buckets else np.zeros(0, dtype=np.int64)


def bucket_plan(total: int, bucket_elems: int, parts: int) -> SegmentPlan:
    """Buckets of at most ``bucket_elems`` elements, each split into ``parts`` segments."""
    if bucket_elems < 1:
        raise ValueError(f"a bucket must hold at least one element, got {bucket_elems}")
    full, rest = divmod(total, bucket_elems)
    rows = [split_widths(bucket_elems, parts)] * full + ([split_widths(rest, parts)] if rest else [])
    widths = np.array(rows, dtype=np.int64).reshape(len(rows), parts)
    # Within a bucket the segments follow each other; buckets start every bucket_elems.
    starts = np.arange(len(rows), dtype=np.int64) * bucket_elems
    offsets = np.zeros_like(widths)
    np.cumsum(widths[:, :-1], axis=1, out=offsets[:, 1:])
    offsets += starts[:, None]
    return SegmentPlan(offsets, widths, total)


def shard_plan(total: int, shards: int) -> SegmentPlan:
    """``shards`` server shards over the whole buffer, as a one-bucket plan."""
    widths = split_widths(total, shards)
    return SegmentPlan(offsets_of(widths)[None, :], widths[None, :], total)
