"""Aggregation contracts: how per-worker pieces combine into one global value.

Three pure functions define the arithmetic every reduction in the suite must
obey. They take and return plain Python values and are exact for integer
inputs of any size (they compute with ``fractions.Fraction`` and round once at
the end). The production path calls the vectorised twins below them
(``mean_from_totals``, ``check_pieces``/``place_pieces``, ``moments_from_totals``),
which share the same rules, so the contract and the hot path cannot drift apart.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Iterable, Sequence

import numpy as np


# --------------------------------------------------------------------------- weighted mean
def weighted_mean(rows: Iterable[tuple[Sequence, int]]) -> list:
    """Element-wise example mean over rows of ``(gradient_mean, example_count)``.

    Rows with count zero contribute nothing. No rows, or a total count of zero,
    gives ``[]``.
    """
    totals: list[Fraction] | None = None
    total_count = 0
    for mean, count in rows:
        if count == 0:
            continue
        weighted = [Fraction(m) * count for m in mean]
        if totals is None:
            totals = weighted
        else:
            if len(weighted) != len(totals):
                raise ValueError("rows differ in length")
            totals = [t + w for t, w in zip(totals, weighted)]
        total_count += count
    if totals is None or total_count == 0:
        return []
    return [float(v) for v in mean_from_totals(totals, total_count)]


def mean_from_totals(sums, total_count):
    """Divide summed values by the total example count, once.

    Works on a list of Fractions (exact) and on an array (in place on the
    production buffer). A zero count means nothing contributed: ``None``.
    """
    if total_count == 0:
        return None
    if isinstance(sums, np.ndarray):
        np.divide(sums, sums.dtype.type(total_count), out=sums)
        return sums
    return [s / total_count for s in sums]


# --------------------------------------------------------------------------- reassembly
def check_pieces(offsets: Sequence[int], lengths: Sequence[int], total: int) -> bool:
    """True when pieces ``(offset, length)`` cover ``[0, total)`` exactly once.

    Zero-length pieces are allowed anywhere inside ``[0, total]``; any gap,
    overlap, negative offset or piece reaching past ``total`` makes it False.
    """
    spans = sorted(zip(offsets, lengths))
    cursor = 0
    for offset, length in spans:
        if length < 0 or offset < 0 or offset + length > total:
            return False
        if length == 0:
            continue
        if offset != cursor:
            return False  # a gap (offset > cursor) or an overlap (offset < cursor)
        cursor = offset + length
    return cursor == total


def reassemble(chunks, total: int):
    """The list exactly covered by ``(offset, values)`` pieces, placed by global offset.

    The order of the pieces is irrelevant. Returns ``None`` on any gap, overlap
    or piece out of bounds.
    """
    pieces = [(int(offset), list(values)) for offset, values in chunks]
    if not check_pieces([o for o, _ in pieces], [len(v) for _, v in pieces], total):
        return None
    out: list = [None] * total
    for offset, values in pieces:
        out[offset:offset + len(values)] = values
    return out


def place_pieces(out: np.ndarray, pieces) -> bool:
    """Write ``(offset, array)`` pieces into ``out`` if they cover it exactly.

    The production twin of :func:`reassemble`: nothing is written unless the
    pieces pass :func:`check_pieces`. Returns whether they did.
    """
    if not check_pieces([o for o, _ in pieces], [len(a) for _, a in pieces], len(out)):
        return False
    for offset, values in pieces:
        if len(values):
            out[offset:offset + len(values)] = values
    return True


# --------------------------------------------------------------------------- pooled variance
def pooled_variance(stats):
    """Global population variance from per-worker ``(count, sum, sumsq)``.

    Includes the spread between workers' means as well as within each worker.
    Rounded to 12 decimals; ``None`` when the total count is zero.
    """
    count, total, total_sq = 0, Fraction(0), Fraction(0)
    for n, s, ss in stats:
        if n == 0:
            continue
        count += n
        total += Fraction(s)
        total_sq += Fraction(ss)
    moments = moments_from_totals(count, total, total_sq)
    if moments is None:
        return None
    return float(round(moments[1], 12))


def moments_from_totals(count, total, total_sq):
    """``(mean, population variance)`` from summed count, sum and sum of squares.

    Generic over Fractions (exact) and floats (the per-step loss statistics).
    Summing raw moments before dividing is what brings the between-worker
    spread in: averaging per-worker variances would lose it.
    """
    if count == 0:
        return None
    mean = total / count
    return mean, total_sq / count - mean * mean
