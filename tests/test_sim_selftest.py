"""The self-test's known-bad reductions are caught on the simulated engine (mpibench.sim.selftest).

Every trial of the real self-test runs simulated and is judged by the real
self-test's rules: each of the 16 mutant trials is caught, the equal-batch
controls are not, the honest controls hold every invariant. The steps at
which they are caught are the ones the real self-test reports on MPI
(``REAL_MPI_STEPS``: from ``python -m mpibench selftest`` under mpirun on this
machine, recorded in the commit that added them).
"""
from __future__ import annotations

import pytest

from mpibench.drive.selftest import trials
from simrun import run_driver

LABELS = [t.label for t in trials()]


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
