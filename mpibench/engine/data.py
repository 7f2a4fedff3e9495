"""Synthetic classification data, uneven shards and a worker's walk through its shard.

Shards are uneven on purpose: a reduction that averages per-worker means
instead of weighting by sample count gives a different answer as soon as two
batches differ in size, and the equivalence check then catches it. Epochs end
on the short batch the shard size leaves over, for the same reason.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpibench.base import seeds


@dataclass(frozen=True)
class Dataset:
    features: np.ndarray  # float32 (n_samples, n_features)
    labels: np.ndarray  # int64 (n_samples,)

    @property
    def n_samples(self) -> int:
        return len(self.labels)


def make_dataset(seed: int, n_samples: int, n_features: int, n_classes: int) -> Dataset:
    """Gaussian blobs around one random centre per class, with label noise from overlap."""
    rng = seeds.generator(seed, seeds.DATA)
    centres = rng.normal(0.0, 1.5, size=(n_classes, n_features))
    labels = rng.integers(0, n_classes, size=n_samples)
    features = centres[labels] + rng.normal(0.0, 1.0, size=(n_samples, n_features))
    return Dataset(features.astype(np.float32), labels.astype(np.int64))


def shard_sizes(seed: int, n_samples: int, n_shards: int) -> list[int]:
    """Deliberately unequal shard sizes summing to ``n_samples``.

    Sizes grow linearly from 1x to 2x over the shards (in a seeded order), so
    no two neighbouring workers hold the same amount of data.
    """
    if n_shards < 1:
        raise ValueError("need at least one shard")
    if n_samples < n_shards:
        raise ValueError(f"{n_samples} samples cannot fill {n_shards} shards")
    weights = np.linspace(1.0, 2.0, n_shards)
    seeds.generator(seed, seeds.SHARDS, 0).shuffle(weights)
    sizes = np.floor(weights / weights.sum() * n_samples).astype(int)
    sizes = np.maximum(sizes, 1)
    sizes[np.argmax(sizes)] += n_samples - sizes.sum()
    return [int(s) for s in sizes]


def make_shards(seed: int, n_samples: int, n_shards: int) -> list[np.ndarray]:
    """Disjoint index arrays, one per shard, covering every sample once."""
    order = seeds.generator(seed, seeds.SHARDS, 1).permutation(n_samples)
    bounds = np.cumsum([0] + shard_sizes(seed, n_samples, n_shards))
    return [np.sort(order[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]


@dataclass(frozen=True)
class Cursor:
    """Where a worker stands in its shard: the epoch and the position in its order."""

    epoch: int = 0
    position: int = 0


def next_cursor(cursor: Cursor, shard_len: int, batch_size: int) -> Cursor:
    """Where a walk stands after one batch from ``cursor`` (the epoch's last batch may be short)."""
    if shard_len == 0:
        return cursor
    end = min(cursor.position + batch_size, shard_len)
    return Cursor(cursor.epoch + 1, 0) if end == shard_len else Cursor(cursor.epoch, end)


class ShardWalker:
    """Walks one shard in a seeded order per epoch with a fixed local batch size.

    The order of an epoch is a pure function of (seed, shard, epoch), so a
    replacement worker given only the cursor continues exactly where the dead
    one stopped.
    """

    def __init__(self, seed: int, shard_id: int, shard: np.ndarray, batch_size: int):
        if batch_size < 1:
            raise ValueError("batch size must be at least 1")
        self.seed, self.shard_id, self.shard, self.batch_size = seed, shard_id, shard, batch_size
        self._order_epoch = -1
        self._order = shard

    def epoch_order(self, epoch: int) -> np.ndarray:
        if epoch != self._order_epoch:
            rng = seeds.generator(self.seed, seeds.ORDER, self.shard_id, epoch)
            self._order = self.shard[rng.permutation(len(self.shard))]
            self._order_epoch = epoch
        return self._order

    def batch(self, cursor: Cursor) -> tuple[np.ndarray, Cursor]:
        """The sample indices of the next batch and the cursor after it."""
        if len(self.shard) == 0:
            return self.shard[:0], cursor
        order = self.epoch_order(cursor.epoch)
        end = min(cursor.position + self.batch_size, len(order))
        return order[cursor.position:end], next_cursor(cursor, len(order), self.batch_size)
