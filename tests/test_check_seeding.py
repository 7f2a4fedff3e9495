"""The checker's own copy of the seeding rule gives what the production path draws."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpibench.engine import data, model
from mpibench.check import seeding


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shards=st.integers(1, 9), extra=st.integers(0, 300))
def test_shards_and_epoch_orders_match(seed, shards, extra):
    samples = shards + extra
    mine, theirs = seeding.shards(seed, samples, shards), data.make_shards(seed, samples, shards)
    assert all(np.array_equal(a, b) for a, b in zip(mine, theirs)) and len(mine) == len(theirs)
    for k in range(shards):
        walker = data.ShardWalker(seed, k, theirs[k], 4)
        for epoch in range(3):
            assert np.array_equal(seeding.epoch_order(seed, k, mine[k], epoch), walker.epoch_order(epoch))


@pytest.mark.parametrize("seed,samples,features,classes", [(0, 1200, 16, 4), (3, 5, 1, 2), (99, 77, 7, 3)])
def test_dataset_and_initial_weights_match(seed, samples, features, classes):
    x, y = seeding.dataset(seed, samples, features, classes)
    d = data.make_dataset(seed, samples, features, classes)
    assert np.array_equal(x, d.features) and np.array_equal(y, d.labels)
    for hidden in (1, 32):
        theirs = model.init_params(seed, model.Shapes(features, hidden, classes))
        assert np.array_equal(seeding.initial_params(seed, features, hidden, classes), theirs)


def test_epoch_orders_differ_between_epochs():
    shard = seeding.shards(0, 100, 3)[0]
    orders = [tuple(seeding.epoch_order(0, 0, shard, e)) for e in range(4)]
    assert len(set(orders)) == 4
