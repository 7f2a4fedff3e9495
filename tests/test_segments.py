"""Segment and shard planning: pieces named by global offset cover the buffer exactly."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.base.aggregate import check_pieces, reassemble
from mpibench.sync.segments import bucket_plan, shard_plan, split_widths


@given(length=st.integers(0, 5000), parts=st.integers(1, 40))
def test_split_widths_cover_and_differ_by_at_most_one(length, parts):
    widths = split_widths(length, parts)
    assert widths.sum() == length and len(widths) == parts
    assert widths.max() - widths.min() <= 1
    assert list(widths) == sorted(widths, reverse=True)  # the wider parts come first


@settings(max_examples=200)
@given(total=st.integers(0, 3000), cap=st.integers(1, 700), parts=st.integers(1, 9))
def test_bucket_plan_covers_with_capped_buckets(total, cap, parts):
    plan = bucket_plan(total, cap, parts)
    assert plan.covers()
    assert plan.buckets == -(-total // cap) and plan.parts == parts
    bucket_sizes = plan.widths.sum(axis=1)
    assert (bucket_sizes <= cap).all() and bucket_sizes.sum() == total
    # Buckets are consecutive and every segment lies inside its own bucket.
    starts = np.arange(plan.buckets) * cap
    assert (plan.offsets >= starts[:, None]).all()
    assert (plan.offsets + plan.widths <= starts[:, None] + bucket_sizes[:, None]).all()
    values = list(range(total))
    chunks = [(o, values[o:o + n]) for o, n in plan.pieces()]
    assert reassemble(chunks[::-1], total) == values


@pytest.mark.parametrize("total,parts", [(0, 4), (1, 4), (3, 4), (5, 4), (7, 1)])
def test_fewer_elements_than_parts_gives_zero_length_segments(total, parts):
    plan = bucket_plan(total, 1 << 20, parts)
    assert plan.covers()
    assert (plan.widths == 0).sum() == (max(parts - total, 0) if total else 0)


@given(total=st.integers(0, 2000), shards=st.integers(1, 20))
def test_shard_plan_is_one_bucket_of_uneven_shards(total, shards):
    plan = shard_plan(total, shards)
    assert plan.buckets == 1 and plan.parts == shards and plan.covers()


def test_a_shifted_segment_no_longer_covers():
    plan = bucket_plan(10, 4, 2)
    plan.offsets[1, 1] -= 1  # overlaps its left neighbour, leaves a gap behind it
    assert not plan.covers()
    assert not check_pieces(*zip(*plan.pieces()), 10)


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        split_widths(3, 0)
    with pytest.raises(ValueError):
        bucket_plan(10, 0, 2)
