"""The self-test's known-bad variants, one record each: the name, the mistake it makes,
the invariant that must catch it and the engines it runs on.

Apart from :mod:`.build` (which builds them from the strategies, and so
imports MPI) so that the self-test driver can list and plan them without
importing mpi4py.
"""
from __future__ import annotations

from dataclasses import dataclass


# Both engines run every variant: the self-test on MPI (:mod:`mpibench.selftest.drive`) and
# the simulated one (:mod:`mpibench.selftest.sim`) catch each by the same invariants.
BOTH_ENGINES = ("mpi", "sim")
ADAM, ADAMW = ("--optimizer", "adam"), ("--optimizer", "adamw", "--weight-decay", "0.1")


@dataclass(frozen=True)
class Mutant:
    """One known-bad variant: its name (``run --run-parts mpibench.selftest.variants:NAME``),
    the mistake it plants, the invariant that must be among those that catch it, and the
    engines the self-test runs it on."""

    name: str
    mistake: str
    caught_by: str  # an invariant's NAME (mpibench/check/invariants/)
    weighting: bool = False  # only visible when batch sizes differ
    needs_faults: bool = False
    engines: tuple[str, ...] = BOTH_ENGINES
    options: tuple[str, ...] = ()  # run options it needs (an honest run with them is a control)
    overlap: bool = False  # planted in the overlapped sync: its trials run with run --overlap


MUTANTS = {m.name: m for m in [
    Mutant("unweighted", "plain mean of per-worker mean gradients", "equivalence", weighting=True),
    Mutant("numerator-only", "count-weighted sums divided by replicas x nominal batch", "equivalence", weighting=True),
    Mutant("variance-within", "loss variance without the between-worker term", "equivalence"),
    Mutant("offset-blind", "ring segments concatenated in arrival order", "equivalence"),
    Mutant("bounds-only", "overlapping ring pieces written, only bounds checked", "equivalence"),
    Mutant("dead-leak", "a dead rank's partial sum left in the redone step", "equivalence", needs_faults=True),
    Mutant("stale-rejoin", "a respawned or healed rank rejoins with stale parameters",
           "equivalence", needs_faults=True),
    Mutant("double-apply", "a redone step applied on top of the aborted one", "equivalence", needs_faults=True),
    Mutant("resume-epoch-start", "a replacement resumes at the start of its epoch", "data", needs_faults=True),
    Mutant("shard-swap", "survivors walk the shard of their new rank after a shrink", "data", needs_faults=True),
    Mutant("drop-tail", "the short last batch of an epoch is skipped", "data"),
    Mutant("no-reshuffle", "every epoch walks epoch 0's order", "data"),
    Mutant("keep-aborted", "a retry keeps the aborted attempt's update", "equivalence", needs_faults=True),
    Mutant("minority-commit", "a cut-off minority commits the step on its own", "membership", needs_faults=True),
    Mutant("skip-member", "a live worker's batch is consumed but left out of the reduction", "membership"),
    Mutant("stall-claims-batch", "a stalled worker's record claims a batch its cursor never left",
           "contract", needs_faults=True),
    Mutant("lone-recorder", "only worker 0 records its full parameter copy and losses", "contract"),
    Mutant("late-keeps-batch", "a dropped straggler walks its batch again", "contract", needs_faults=True),
    Mutant("abort-advances", "a rollback undoes the update but not the batch", "data", needs_faults=True),
    Mutant("copy-lies", "a contributor other than the lowest records a wrong effective batch", "accounting"),
    Mutant("late-copy-lies", "a dropped straggler's record claims a wrong loss mean", "equivalence", needs_faults=True),
    Mutant("steps-csv-lies", "steps.csv claims a wrong effective batch for step 2", "accounting"),
    Mutant("step3-lr", "step 3's update applied with 1.5x the learning rate (skipped online at --check-every 4)",
           "equivalence"),
    Mutant("nan-count", "NaN in the count slot of one worker's buffer at step 2", "equivalence"),
    Mutant("nan-grad", "NaN in a gradient element of one worker's buffer at step 2", "equivalence"),
    Mutant("float32-loss", "the loss sums travel and add in float32", "equivalence"),
    Mutant("stale-loss", "each step reports the previous step's loss statistics", "equivalence"),
    Mutant("shard-offset", "zero-ring: every owner but the first steps its shard one element early", "ownership"),
    Mutant("owner-steps-twice", "zero-ring: each owner applies its shard's update twice", "ownership"),
    Mutant("stale-gather", "zero-ring: the last worker keeps its previous copy of shard 0 after the gather",
           "gathered"),
    Mutant("state-lost-on-respawn", "zero-ring --momentum: the replacement starts without the optimizer state "
           "(the refusal switched off)", "optimizer_state", needs_faults=True),
    Mutant("replica-stale-gather", "hsdp: the first replica group's last member keeps its previous copy of "
           "shard 0 after the gather", "gathered"),
    Mutant("replica-swap-skipped", "hsdp: the second replica group's owners step from their own group's sums",
           "replicas"),
    Mutant("handover-claims-all", "hsdp --momentum, respawn: every handover message marks every element as "
           "held, so the replacement copies a non-holder's zeros", "optimizer_state", needs_faults=True),
    Mutant("early-bucket", "--overlap: the first bucket's update uses its local gradient, read before its sync "
           "completed", "equivalence", overlap=True),
    Mutant("bucket-twice", "--overlap: the bucket carrying the count is summed again once its sum is in",
           "accounting", overlap=True),
    Mutant("bucket-offsets", "--overlap: each bucket's sum written back at its offset in start order (the pieces "
           "still tile the buffer)", "equivalence", overlap=True),
    Mutant("hsdp-state-lost-on-respawn", "hsdp --momentum, respawn: every handover message says no state is "
           "held; the replacement starts from zero although the replica holds it",
           "optimizer_state", needs_faults=True),
    # the optimizer defects (variants/optimizer.py), each with the options it runs under
    Mutant("adam-no-bias-correction", "adam: m and v used without their bias corrections", "equivalence",
           options=ADAM),
    Mutant("adam-beta1-for-beta2", "adam: the second moment decays and is corrected with beta1",
           "optimizer_state", options=ADAM),
    Mutant("adam-steps-twice", "adam: the step count advances twice per step", "optimizer_state", options=ADAM),
    Mutant("adamw-drops-decay", "adamw --weight-decay 0.1: the decoupled decay left out", "equivalence",
           options=ADAMW),
]}


def runs_on(name: str | None, engine: str) -> bool:
    """Whether the self-test runs variant ``name`` on ``engine`` (None, the honest code: everywhere)."""
    return name is None or engine in MUTANTS[name].engines
