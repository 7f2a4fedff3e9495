"""The three aggregation contracts, exact for integers of any scale."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.base.aggregate import (check_pieces, mean_from_totals, place_pieces, pooled_variance,
                                reassemble, weighted_mean)

big_ints = st.integers(min_value=-(10**30), max_value=10**30)


def test_documented_examples():
    assert weighted_mean([([1, 2], 1), ([3, 4], 3)]) == [2.5, 3.5]
    assert reassemble([[2, [2, 3]], [0, [0, 1]]], 4) == [0, 1, 2, 3]
    assert reassemble([[0, [0, 1, 2]], [2, [2, 3]]], 4) is None
    assert pooled_variance([[1, 0, 0], [1, 2, 4]]) == 1


@pytest.mark.parametrize("rows", [[], [([1.0, 2.0], 0)], [([5], 0), ([7], 0)]])
def test_weighted_mean_empty_or_zero_count(rows):
    assert weighted_mean(rows) == []


def test_weighted_mean_zero_count_rows_contribute_nothing():
    assert weighted_mean([([100, 100], 0), ([1, 3], 2)]) == [1.0, 3.0]


@given(st.lists(st.tuples(st.lists(big_ints, min_size=3, max_size=3), st.integers(0, 10**12)),
                min_size=1, max_size=6))
def test_weighted_mean_exact_for_big_integers(rows):
    total = sum(c for _, c in rows)
    expected = [] if total == 0 else [
        float(Fraction(sum(m[i] * c for m, c in rows), total)) for i in range(3)]
    assert weighted_mean(rows) == expected


@given(st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=5), st.integers(1, 8))
def test_weighted_mean_of_equal_counts_is_plain_mean(values, copies):
    rows = [([v], copies) for v in values]
    assert weighted_mean(rows) == [float(Fraction(sum(values), len(values)))]


def test_mean_from_totals_vectorised_matches_contract():
    sums = np.array([10.0, 14.0], dtype=np.float32)
    assert mean_from_totals(sums, 4).tolist() == weighted_mean([([1, 2], 1), ([3, 4], 3)])
    assert mean_from_totals(np.ones(2), 0) is None


@st.composite
def cover(draw):
    total = draw(st.integers(0, 60))
    cuts = sorted(draw(st.lists(st.integers(0, total), max_size=8)))
    bounds = [0, *cuts, total]
    pieces = [(lo, list(range(lo, hi))) for lo, hi in zip(bounds[:-1], bounds[1:])]
    return total, draw(st.permutations(pieces))


@given(cover())
def test_reassemble_any_order_any_widths(case):
    total, pieces = case
    assert reassemble(pieces, total) == list(range(total))


@given(cover(), st.data())
def test_reassemble_rejects_gap_overlap_and_out_of_bounds(case, data):
    total, pieces = case
    nonempty = [i for i, (_, v) in enumerate(pieces) if v]
    if not nonempty:
        assert reassemble(pieces + [(total, [1])], total) is None  # out of bounds
        return
    i = data.draw(st.sampled_from(nonempty))
    offset, values = pieces[i]
    gap = pieces[:i] + pieces[i + 1:]
    assert reassemble(gap, total) is None
    assert reassemble(pieces + [(offset, values[:1])], total) is None  # overlap
    shifted = pieces[:i] + [(offset + 1, values)] + pieces[i + 1:]
    assert reassemble(shifted, total) is None
    assert reassemble(pieces[:i] + [(-1, values)] + pieces[i + 1:], total) is None


def test_reassemble_edges():
    assert reassemble([], 0) == []
    assert reassemble([(0, [])], 0) == []
    assert reassemble([(0, [])], 1) is None
    assert reassemble([(0, [1]), (1, [])], 1) == [1]
    assert reassemble([(2, [])], 1) is None


@given(cover())
def test_place_pieces_is_the_same_rule(case):
    total, pieces = case
    out = np.full(total, -1.0)
    arrays = [(o, np.array(v, dtype=float)) for o, v in pieces]
    assert place_pieces(out, arrays)
    assert out.tolist() == list(range(total))
    if total:
        untouched = np.full(total, -1.0)
        assert not place_pieces(untouched, arrays[1:] if arrays[0][1].size else arrays + [(0, np.ones(1))])
        assert (untouched == -1).all()  # nothing written when the pieces do not cover


def test_check_pieces_matches_reassemble():
    assert check_pieces([0, 2], [2, 2], 4)
    assert not check_pieces([0, 1], [2, 3], 4)


@given(st.lists(st.tuples(st.integers(0, 10**6), big_ints, st.integers(0, 10**40)), max_size=6))
def test_pooled_variance_exact(stats):
    n = sum(c for c, _, _ in stats if c)
    if n == 0:
        assert pooled_variance(stats) is None
        return
    s = sum(Fraction(x) for c, x, _ in stats if c)
    ss = sum(Fraction(x) for c, _, x in stats if c)
    assert pooled_variance(stats) == float(round(ss / n - (s / n) ** 2, 12))


@settings(max_examples=50)
@given(st.lists(st.lists(st.integers(-1000, 1000), min_size=0, max_size=6), min_size=1, max_size=5))
def test_pooled_variance_includes_between_worker_spread(groups):
    stats = [(len(g), sum(g), sum(v * v for v in g)) for g in groups]
    everything = [v for g in groups for v in g]
    if not everything:
        assert pooled_variance(stats) is None
        return
    mean = Fraction(sum(everything), len(everything))
    expected = sum((v - mean) ** 2 for v in everything) / len(everything)
    assert pooled_variance(stats) == float(round(expected, 12))


def test_pooled_variance_zero_count_workers_excluded():
    assert pooled_variance([[0, 99, 99], [2, 2, 2]]) == 0
    assert pooled_variance([[0, 5, 5]]) is None
