"""The names of the self-test's known-bad reductions and the mistake each makes.

Apart from :mod:`.mutants` (which builds them from the strategies, and so
imports MPI) so that the self-test driver can list and plan them without
importing mpi4py.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    mistake: str
    weighting: bool = False  # only visible when batch sizes differ
    needs_faults: bool = False


MUTANTS = {m.name: m for m in [
    Mutant("unweighted", "plain mean of per-worker mean gradients", weighting=True),
    Mutant("numerator-only", "count-weighted sums divided by replicas x nominal batch", weighting=True),
    Mutant("variance-within", "loss variance without the between-worker term"),
    Mutant("offset-blind", "ring segments concatenated in arrival order"),
    Mutant("bounds-only", "overlapping ring pieces written, only bounds checked"),
    Mutant("dead-leak", "a dead rank's partial sum left in the redone step", needs_faults=True),
    Mutant("stale-rejoin", "a respawned or healed rank rejoins with stale parameters", needs_faults=True),
    Mutant("double-apply", "a redone step applied on top of the aborted one", needs_faults=True),
    Mutant("resume-epoch-start", "a replacement resumes at the start of its epoch", needs_faults=True),
    Mutant("shard-swap", "survivors walk the shard of their new rank after a shrink", needs_faults=True),
    Mutant("drop-tail", "the short last batch of an epoch is skipped"),
    Mutant("no-reshuffle", "every epoch walks epoch 0's order"),
    Mutant("keep-aborted", "a retry keeps the aborted attempt's update", needs_faults=True),
    Mutant("minority-commit", "a cut-off minority commits the step on its own", needs_faults=True),
    Mutant("skip-member", "a live worker's batch is consumed but left out of the reduction"),
    Mutant("stall-claims-batch", "a stalled worker's record claims a batch its cursor never left", needs_faults=True),
    Mutant("lone-recorder", "only worker 0 records its full parameter copy and losses"),
    Mutant("late-keeps-batch", "a dropped straggler walks its batch again", needs_faults=True),
    Mutant("abort-advances", "a rollback undoes the update but not the batch", needs_faults=True),
    Mutant("copy-lies", "a contributor other than the lowest records a wrong effective batch"),
    Mutant("late-copy-lies", "a dropped straggler's record claims a wrong loss mean", needs_faults=True),
    Mutant("steps-csv-lies", "steps.csv claims a wrong effective batch for step 2"),
    Mutant("step3-lr", "step 3's update applied with 1.5x the learning rate (skipped online at --check-every 4)"),
    Mutant("nan-count", "NaN in the count slot of one worker's buffer at step 2"),
    Mutant("nan-grad", "NaN in a gradient element of one worker's buffer at step 2"),
    Mutant("float32-loss", "the loss sums travel and add in float32"),
    Mutant("stale-loss", "each step reports the previous step's loss statistics"),
    Mutant("shard-offset", "zero-ring: every owner but the first steps its shard one element early"),
    Mutant("owner-steps-twice", "zero-ring: each owner applies its shard's update twice"),
    Mutant("stale-gather", "zero-ring: the last worker keeps its previous copy of shard 0 after the gather"),
    Mutant("state-lost-on-respawn", "zero-ring --momentum: the replacement starts without the optimizer state "
           "(the refusal switched off)", needs_faults=True),
    Mutant("replica-stale-gather", "hsdp: the first replica group's last member keeps its previous copy of "
           "shard 0 after the gather"),
    Mutant("replica-swap-skipped", "hsdp: the second replica group's owners step from their own group's sums"),
    Mutant("handover-claims-all", "hsdp --momentum, respawn: every handover message marks every element as "
           "held, so the replacement copies a non-holder's zeros", needs_faults=True),
    Mutant("hsdp-state-lost-on-respawn", "hsdp --momentum, respawn: every handover message says no state is "
           "held; the replacement starts from zero although the replica holds it", needs_faults=True),
]}
