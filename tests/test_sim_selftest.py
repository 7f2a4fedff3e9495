"""The self-test's known-bad reductions are caught on the simulated engine (mpibench.sim.selftest).

Every trial of the real self-test runs simulated and is judged by the real
self-test's rules: each of the 16 mutant trials is caught, the equal-batch
controls are not, the honest controls hold every invariant. The steps at
which they are caught are the ones the real self-test reports on MPI
(``REAL_MPI``: what ``python -m mpibench selftest`` printed for each mutant
under ``mpirun -n 3 --oversubscribe --with-ft ulfm`` on this machine,
2026-12-01 22:05 UTC, load average 15-25, all 16 caught in 98 s).
"""
from __future__ import annotations

import pytest

from mpibench.drive.selftest import trials
from simrun import run_driver

LABELS = [t.label for t in trials()]

REAL_MPI = {
    'unweighted': 'caught by equivalence at step 1',
    'numerator-only': 'caught by equivalence at step 1',
    'variance-within': 'caught by equivalence at step 0',
    'offset-blind': 'caught by equivalence, replicas at step 0',
    'bounds-only': 'caught by equivalence, coverage at step 0',
    'dead-leak': 'caught by equivalence, accounting at step 1',
    'stale-rejoin': 'caught by equivalence, replicas at step 3',
    'double-apply': 'caught by equivalence at step 1',
    'resume-epoch-start': 'caught by data at step 3',
    'shard-swap': 'caught by data at step 2',
    'drop-tail': 'caught by data at step 1',
    'no-reshuffle': 'caught by data at step 2',
    'keep-aborted': 'caught by equivalence at step 1',
    'minority-commit': 'caught by replicas, membership at step 1',
    'skip-member': 'caught by membership at step 0',
    'stale-rejoin/respawn': 'caught by equivalence, replicas at step 1',
}



@pytest.fixture(scope="module")
def found(tmp_path_factory) -> dict:
    return run_driver("sim_selftest.py", str(tmp_path_factory.mktemp("selftest")))


@pytest.mark.parametrize("label", LABELS)
def test_trial_comes_out_as_the_real_self_test_demands(found, label):
    trial = found["trials"][label]
    assert trial["ok"], trial["text"]


def test_every_mutant_trial_is_caught_and_every_control_is_not(found):
    caught = {label for label, t in found["trials"].items() if t["first"]}
    mutants = {label for label, t in found["trials"].items() if t["expect_caught"]}
    assert len(mutants) == 16
    assert caught == mutants


@pytest.mark.parametrize("label", sorted(REAL_MPI))
def test_caught_by_the_same_invariants_at_the_same_step_as_on_real_mpi(found, label):
    assert found["trials"][label]["text"] == REAL_MPI[label]
