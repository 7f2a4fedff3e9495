"""The documented seeding rule, written out again on the checker's side.

Every random draw of a run comes from ``numpy.random.SeedSequence(seed,
spawn_key=(purpose, *key))`` with the purposes below; from it this module
rebuilds, by its own code, the data set, the uneven shards, each shard's
epoch order and the initial weights. Worker ``w`` owns shard ``w`` for the
whole run: the checker never asks a worker which shard it holds.
"""
from __future__ import annotations

import numpy as np

DATA, SHARDS, ORDER, MODEL = 1, 2, 3, 4


def _rng(seed: int, purpose: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(purpose, *key)))


def dataset(seed: int, n_samples: int, n_features: int, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(features float32, labels int64)``: one Gaussian blob per class."""
    rng = _rng(seed, DATA)
    centres = rng.normal(0.0, 1.5, size=(n_classes, n_features))
    labels = rng.integers(0, n_classes, size=n_samples)
    features = centres[labels] + rng.normal(0.0, 1.0, size=(n_samples, n_features))
    return features.astype(np.float32), labels.astype(np.int64)


def shards(seed: int, n_samples: int, n_shards: int) -> list[np.ndarray]:
    """Shard ``k``'s sorted sample indices: sizes from 1x to 2x in a seeded order."""
    weights = np.linspace(1.0, 2.0, n_shards)
    _rng(seed, SHARDS, 0).shuffle(weights)
    sizes = np.maximum(np.floor(weights / weights.sum() * n_samples).astype(int), 1)
    sizes[np.argmax(sizes)] += n_samples - sizes.sum()
    order = _rng(seed, SHARDS, 1).permutation(n_samples)
    cuts = np.concatenate([[0], np.cumsum(sizes)])
    return [np.sort(order[cuts[k]:cuts[k + 1]]) for k in range(n_shards)]


def epoch_order(seed: int, shard_id: int, shard: np.ndarray, epoch: int) -> np.ndarray:
    """The order in which shard ``shard_id`` is walked in ``epoch`` (a new one each epoch)."""
    return shard[_rng(seed, ORDER, shard_id, epoch).permutation(len(shard))]


def initial_params(seed: int, n_features: int, hidden: int, n_classes: int) -> np.ndarray:
    """Flat float32 ``[w1, b1, w2, b2]``: normal weights, zero biases."""
    rng = _rng(seed, MODEL)
    w1 = rng.normal(0, 1 / np.sqrt(n_features), size=(n_features, hidden))
    w2 = rng.normal(0, 1 / np.sqrt(hidden), size=(hidden, n_classes))
    return np.concatenate([w1.ravel(), np.zeros(hidden), w2.ravel(), np.zeros(n_classes)]).astype(np.float32)
