"""The self-test's defects in hybrid sharding: mixins over ``hsdp`` (:class:`mpibench.sync.hsdp.Hsdp`).

* ``replica-stale-gather``: the last member of the first replica group keeps
  its own previous copy of shard 0 (owned by the group's first member)
  instead of the one its group gathered: a replica group gathering a stale
  shard (the message arrives, the copy into the parameters is skipped).
* ``replica-swap-skipped``: the owners in the second replica group step their
  shards from their own group's sums: the other group's sums arrive in the
  swap but are not added, so the two replicas of a shard step different bits.
* ``handover-ignores-mask``: the optimizer-state handover after a membership
  change copies every element it lacks from the first other member (in rank
  order) whether that member holds it or not: the replica's state is handed
  over from the wrong member (zeros where that member held nothing).
* ``hsdp-state-lost-on-respawn``: no handover at all: the replacement starts
  from zero state although the dead owner's replica holds it.

Each records what it did (the pieces it stepped), as an honest strategy would;
the checker must find the mistake from its own model.
"""
from __future__ import annotations

import numpy as np


class ReplicaStaleGatherMixin:
    """The first replica group's last member keeps its previous copy of shard 0."""

    def gather_into(self, params):
        start, members = self.groups[0]
        if self.k != 0 or members < 2 or self.position != start + members - 1:
            return super().gather_into(params)
        kept = np.array(self.layout.params_view(params, 0), copy=True)
        super().gather_into(params)
        self.layout.params_view(params, 0)[...] = kept


class SwapSkippedMixin:
    """The second group's owners drop the other group's sums received in the swap."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        scatter = self.rounds[0]
        if self.k == 1 and scatter:  # the swap is the second group's last scatter round
            scatter[-1].adds.clear()


def _first_member_always(their_mask: np.ndarray, have: np.ndarray) -> np.ndarray:
    """Every element still lacking, whatever the sender holds (its mask read as all ones)."""
    return ~have


class HandoverIgnoresMaskMixin:
    """The handover copies from the first other member, held or not."""

    def hand_over_state(self, optimizer) -> None:
        from mpibench.sync.state_handover import hand_over

        mine = [self.layout.pieces()[i] for i in self.owned_shards()]
        hand_over(self.comm, self.backend, optimizer, self.owner_pieces(), mine, self.tag + 1,
                  take=_first_member_always)


class HandoverSkippedMixin:
    """No handover: each member keeps what it held (a replacement holds nothing)."""

    def hand_over_state(self, optimizer) -> None:
        return None


HSDP_MIXINS = {"replica-stale-gather": ReplicaStaleGatherMixin, "replica-swap-skipped": SwapSkippedMixin,
               "handover-ignores-mask": HandoverIgnoresMaskMixin,
               "hsdp-state-lost-on-respawn": HandoverSkippedMixin}
STRATEGY = "hsdp"  # the strategy every mutant here is planted in
# The zero-ring sharding mutants (sharded_mutants.py) that the self-test also plants in hsdp.
ALSO_IN_HSDP = ("shard-offset", "owner-steps-twice")
