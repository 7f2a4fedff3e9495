"""Swarm testing: each sweep case draws its own configuration from its seed.

Besides the fault schedule, a swarm case varies what every other case keeps
fixed: the strategy (from the registry, or the names the sweep was given),
the recovery policy, the ring's bucket cap, the parameter server's shard
count, the batch size, the data size and the check interval. The ranges keep
a case short (small data, at most a few hundred samples per shard) and
include the edges where reductions go wrong: buckets far smaller than the
parameter vector, one sample per batch, more PS shards than workers, checks
that skip steps. The draw is a pure function of (seed, workers), from its own
seed stream, so it never shifts the schedule or the data drawn for the case.
"""
from __future__ import annotations

from dataclasses import dataclass

from mpibench.base import seeds

RECOVERIES = ("shrink", "respawn")
BUCKET_BYTES = (64, 256, 1024, 4096, 1 << 20)  # the MLP's parameters are 2704 bytes
CHECK_EVERY = (1, 1, 2, 3)


@dataclass(frozen=True)
class Knobs:
    strategy: str
    recovery: str
    bucket_bytes: int
    ps_shards: int
    batch_size: int
    samples: int
    check_every: int

    def run_options(self) -> tuple[str, ...]:
        """The ``run`` options that set these knobs (strategy and recovery aside)."""
        return ("--bucket-bytes", str(self.bucket_bytes), "--ps-shards", str(self.ps_shards),
                "--batch-size", str(self.batch_size), "--samples", str(self.samples),
                "--check-every", str(self.check_every))


def draw_knobs(seed: int, workers: int, strategies: tuple[str, ...]) -> Knobs:
    """The configuration of the swarm case (seed, workers), strategy among ``strategies``."""
    rng = seeds.generator(seed, seeds.SWARM, workers)
    strategy = str(rng.choice(sorted(strategies)))
    recovery = str(rng.choice(RECOVERIES))
    bucket_bytes = int(rng.choice(BUCKET_BYTES))
    ps_shards = int(rng.integers(0, workers + 2))  # 0: one per member
    batch_size = int(rng.choice([1, 2, 3, 5, 8, 13, 16, 24]))
    samples = int(rng.integers(max(8 * workers, 40), 601))
    check_every = int(rng.choice(CHECK_EVERY))
    return Knobs(strategy, recovery, bucket_bytes, ps_shards, batch_size, samples, check_every)


def registered_strategies() -> tuple[str, ...]:
    """Every strategy the registry holds: a swarm draws among all of them by default."""
    from mpibench.sync import STRATEGIES

    return tuple(sorted(STRATEGIES))
