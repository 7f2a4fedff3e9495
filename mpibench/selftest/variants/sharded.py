"""The self-test's sharding defects: mixins over the sharded strategies (``zero-ring``; the first
two are also planted in ``hsdp``, where a member may own two shards: each is then stepped so).

* ``shard-offset``: every owner but the first steps its shard one element early
  (an off-by-one shard offset): it steps the last element of the shard before
  it, which that shard's owner steps too, and leaves its own last element
  unstepped; the gather then places the shifted values by the true offsets.
* ``owner-steps-twice``: each owner applies its shard's update twice.
* ``stale-gather``: the last worker in id order keeps its own previous copy
  of shard 0 instead of the gathered one (the message arrives, the copy into
  the parameters is skipped).
* ``state-lost-on-respawn``: ``--momentum`` with ``--recovery respawn`` run
  anyway (the run's refusal is switched off): the replacement starts without
  the optimizer state its worker held.

Each records what it did (the pieces it stepped), as an honest strategy would;
the checker must find the mistake from its own model.
"""
from __future__ import annotations

import numpy as np

from mpibench.sync import sharding


def _owned(strategy) -> list[int]:
    """Every shard this rank owns (an ``hsdp`` member may own two; a folded-out rank none)."""
    if hasattr(strategy, "owned_shards"):
        return strategy.owned_shards()
    shard = strategy.owned_shard()
    return [] if shard is None else [shard]


class ShardOffsetMixin:
    """Every owned shard i > 0 stepped at offset - 1."""

    def step_owned(self, params, lr):
        shards = _owned(self)
        if not any(shards):  # shard 0 (or nothing owned) is stepped where it is
            return super().step_owned(params, lr)
        layout, owned, stepped = self.layout, [], []
        for shard in shards:
            o, w = int(layout.offsets[shard]), int(layout.widths[shard])
            o -= 1 if shard else 0
            target = params[o:o + w]
            sums = layout.sums_view(self.step_buffer, shard)
            self.backend.apply_update(target, sums, layout.count_view(self.step_buffer, shard)[0], lr)
            self.backend.load(sums, target)
            owned.append((o, w))
            stepped.append(np.array(target, dtype=np.float32, copy=True))
        return owned, stepped


class StepTwiceMixin:
    """The owner's update applied twice to each shard it owns (the sums are kept for the second)."""

    def step_owned(self, params, lr):
        shards = _owned(self)
        if not shards:
            return super().step_owned(params, lr)
        layout, owned, stepped = self.layout, [], []
        for shard in shards:
            sums = layout.sums_view(self.step_buffer, shard)
            kept = np.array(sums, copy=True)
            target = layout.params_view(params, shard)
            count = layout.count_view(self.step_buffer, shard)[0]
            self.backend.apply_update(target, sums, count, lr)
            first = np.array(target, dtype=np.float32, copy=True)
            sums[...] = kept
            self.backend.apply_update(target, sums, count, lr)
            self.backend.load(sums, target)
            piece = layout.pieces()[shard]
            owned += [piece, piece]
            stepped += [first, np.array(target, dtype=np.float32, copy=True)]
        return owned, stepped


class StaleGatherMixin:
    """The last worker in id order skips copying shard 0 into its parameters."""

    def gather_into(self, params):
        if self.comm.worker_id != max(self.comm.worker_ids) or len(self.comm.worker_ids) < 2:
            return super().gather_into(params)
        kept = np.array(self.layout.params_view(params, 0), copy=True)
        super().gather_into(params)
        self.layout.params_view(params, 0)[...] = kept


SHARDED_MIXINS = {"shard-offset": ShardOffsetMixin, "owner-steps-twice": StepTwiceMixin,
                  "stale-gather": StaleGatherMixin}
STRATEGY = "zero-ring"  # the strategy every sharding mutant is planted in
NO_REFUSAL = ("state-lost-on-respawn",)  # mutants that run what check_supported refuses
__all__ = ["SHARDED_MIXINS", "STRATEGY", "NO_REFUSAL", "sharding"]
