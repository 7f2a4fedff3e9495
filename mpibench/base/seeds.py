"""One root seed, split into independent streams by purpose.

Every random draw in a run comes from a generator built here from the run
seed and an explicit purpose key, so the same seed always gives the same data,
shards, epoch orders, initial weights and fault schedules, and no stream
depends on how many draws another one made.
"""
from __future__ import annotations

import numpy as np

DATA = 1
SHARDS = 2
ORDER = 3
MODEL = 4
SCHEDULE = 5
BENCH = 6
SWARM = 7  # a sweep case's configuration knobs


def generator(seed: int, purpose: int, *key: int) -> np.random.Generator:
    """A generator for ``purpose`` (and sub-keys such as shard and epoch)."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(purpose, *key)))
