"""The sharded strategies under real MPI: a death in the all-gather and a respawn mid-step, and hsdp's
replica handing a dead owner's optimizer state over.

Depth beside tests/test_sharded.py's breadth on the simulated engine: two real
mpirun jobs (ULFM) kill a rank on the sharded path and recover, once by
shrinking and once by respawning, and every invariant (ownership and gathered
included) holds on every step.
"""
from __future__ import annotations

import pytest

from mpirun import run_mpi

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("strategy,scenario,recovery", [
    ("zero-ring", "kill-mid-gather", "shrink"),
    ("zero-halving", "kill-in-sharded-step", "respawn"),
])
def test_a_death_on_the_sharded_path_recovers_and_every_invariant_holds(tmp_path, strategy, scenario, recovery):
    job = run_mpi(3, ["run", "--strategy", strategy, "--scenario", scenario, "--recovery", recovery,
                      "--steps", "5", "--samples", "90", "--batch-size", "8"], out=tmp_path, timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    rows = job.csv("invariants.csv")
    assert set(rows.invariant) >= {"ownership", "gathered", "equivalence", "replicas"}
    assert (rows.passed.astype(str).str.lower() == "true").all(), rows[rows.passed.astype(str).str.lower() != "true"]
    assert len(set(rows.step)) == 5
    faults = job.csv("faults.csv")
    assert (faults.kind == "kill").any()


@pytest.mark.parametrize("ranks,scenario,recovery", [
    (3, "kill-in-sharded-step", "respawn"),  # the lone member of the small group: both its shards' state
    (4, "kill-owner-0-mid-gather", "shrink"),
])
def test_hsdp_hands_a_dead_owners_optimizer_state_over_from_its_replica(tmp_path, ranks, scenario, recovery):
    job = run_mpi(ranks, ["run", "--strategy", "hsdp", "--momentum", "0.9", "--scenario", scenario,
                          "--recovery", recovery, "--steps", "5", "--samples", "90", "--batch-size", "8"],
                  out=tmp_path, timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    rows = job.csv("invariants.csv")
    assert set(rows.invariant) >= {"ownership", "gathered", "optimizer_state", "equivalence", "replicas"}
    assert (rows.passed.astype(str).str.lower() == "true").all(), rows[rows.passed.astype(str).str.lower() != "true"]
    assert len(set(rows[rows.invariant == "optimizer_state"].step)) == 5
    assert (job.csv("faults.csv").kind == "kill").any()
