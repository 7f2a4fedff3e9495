"""The self-test's defects in hybrid sharding: mixins over ``hsdp`` (:class:`mpibench.sync.hsdp.Hsdp`).

* ``replica-stale-gather``: the last member of the first replica group keeps
  its own previous copy of shard 0 (owned by the group's first member)
  instead of the one its group gathered: a replica group gathering a stale
  shard (the message arrives, the copy into the parameters is skipped).
* ``replica-swap-skipped``: the owners in the second replica group step their
  shards from their own group's sums: the other group's sums arrive in the
  swap but are not added, so the two replicas of a shard step different bits.
* ``handover-claims-all``: in the optimizer-state handover after a membership
  change, every member's message marks every element as held (zeros where it
  holds none), so a new owner copies the first member's zeros as if they were
  the replica's state: the wrong state handed over.
* ``hsdp-state-lost-on-respawn``: every member's handover message says it
  holds no state, so the replacement starts from zero although the dead
  owner's replica holds it.

The handover defects sit in what the members holding state send (the
survivors), not in the replacement: a replacement spawned on MPI runs the
honest code (a mutant is installed per process), and a defect must not
depend on it.

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


def _claims_all(values, mask, holds_any):
    """Every element marked as held (zeros where nothing is) by a member that holds any state."""
    return values, (np.ones_like(mask) if holds_any else mask), holds_any


def _says_nothing(values, mask, holds_any):
    """Nothing marked as held, and no state at all."""
    return values, np.zeros_like(mask), False


class _ToldMixin:
    """The handover's messages say ``told`` of what this member holds (its own copy stays honest)."""

    told = None

    def hand_over_state(self, optimizer) -> None:
        from mpibench.sync.state_handover import hand_over

        mine = [self.layout.pieces()[i] for i in self.owned_shards()]
        hand_over(self.comm, self.backend, optimizer, self.owner_pieces(), mine, self.tag + 1, told=self.told)


class HandoverClaimsAllMixin(_ToldMixin):
    """Each member's handover message marks every element as held."""

    told = staticmethod(_claims_all)


class HandoverSaysNothingMixin(_ToldMixin):
    """Each member's handover message says it holds no state."""

    told = staticmethod(_says_nothing)


HSDP_MIXINS = {"replica-stale-gather": ReplicaStaleGatherMixin, "replica-swap-skipped": SwapSkippedMixin,
               "handover-claims-all": HandoverClaimsAllMixin,
               "hsdp-state-lost-on-respawn": HandoverSaysNothingMixin}
STRATEGY = "hsdp"  # the strategy every mutant here is planted in
# The zero-ring sharding mutants (sharded_mutants.py) that the self-test also plants in hsdp.
ALSO_IN_HSDP = ("shard-offset", "owner-steps-twice")
