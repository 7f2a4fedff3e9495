"""Data set, uneven shards and the shard walk."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.engine.data import Cursor, ShardWalker, make_dataset, make_shards, shard_sizes


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_dataset_deterministic(seed):
    a, b = make_dataset(seed, 50, 4, 3), make_dataset(seed, 50, 4, 3)
    assert np.array_equal(a.features, b.features) and np.array_equal(a.labels, b.labels)
    assert a.features.dtype == np.float32 and set(a.labels) <= {0, 1, 2}


def test_different_seeds_differ():
    assert not np.array_equal(make_dataset(0, 50, 4, 3).features, make_dataset(1, 50, 4, 3).features)


@settings(max_examples=60)
@given(st.integers(1, 9), st.integers(0, 400), st.integers(0, 5))
def test_shards_disjoint_cover_and_uneven(n_shards, extra, seed):
    n = n_shards + extra
    shards = make_shards(seed, n, n_shards)
    together = np.concatenate(shards)
    assert sorted(together.tolist()) == list(range(n))
    sizes = [len(s) for s in shards]
    assert sizes == shard_sizes(seed, n, n_shards) and min(sizes) >= 1
    if n_shards >= 2 and n >= 4 * n_shards:
        assert len(set(sizes)) > 1  # deliberately uneven


def test_too_few_samples_rejected():
    with pytest.raises(ValueError):
        shard_sizes(0, 3, 4)


@pytest.mark.parametrize("shard_len,batch", [(10, 3), (9, 3), (1, 4), (5, 5)])
def test_walk_covers_each_epoch_once_and_ends_short(shard_len, batch):
    shard = np.arange(100, 100 + shard_len)
    walker = ShardWalker(3, 0, shard, batch)
    cursor = Cursor()
    for epoch in range(3):
        seen = []
        while cursor.epoch == epoch:
            idx, cursor = walker.batch(cursor)
            assert len(idx) == min(batch, shard_len - len(seen))
            seen += idx.tolist()
        assert sorted(seen) == shard.tolist()


def test_epoch_orders_differ_and_resume_from_cursor():
    shard = np.arange(40)
    walker = ShardWalker(5, 2, shard, 7)
    assert not np.array_equal(walker.epoch_order(0), walker.epoch_order(1))
    cursor = Cursor(1, 14)
    fresh = ShardWalker(5, 2, shard, 7)  # a replacement worker knows only the cursor
    assert np.array_equal(walker.batch(cursor)[0], fresh.batch(cursor)[0])


def test_empty_shard_gives_empty_batches():
    walker = ShardWalker(0, 0, np.zeros(0, dtype=np.int64), 4)
    idx, cursor = walker.batch(Cursor())
    assert len(idx) == 0 and cursor == Cursor()
