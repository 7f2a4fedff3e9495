"""The self-test's hybrid sharding defects (mpibench/job/hsdp_mutants.py), on the simulated engine.

Each is caught at its step by the checker's own model (the self-test's own
trials, judged as on MPI, are in test_sim_selftest); here: what each plants is
the defect it names, the handover defects show only where a handover happens
(with optimizer state, after a membership change), and zero-ring's stale-gather
has nothing to break in hsdp at p = 3 (why replica-stale-gather exists).
"""
from __future__ import annotations

import pytest

from mpibench.selftest.variants.hsdp import HSDP_MIXINS
from mpibench.kernels import NumpyBackend
from mpibench.sync.hsdp import Hsdp
from fake_comm import FakeComm
from simrun import run_cli


def build(mutant: str, rank: int, p: int, n: int = 10):
    cls = type("Planted", (HSDP_MIXINS[mutant], Hsdp), {})
    return cls(FakeComm(rank, p, tuple(range(p))), NumpyBackend(), n)


@pytest.mark.parametrize("p", [2, 3, 4, 5])
def test_the_swap_is_dropped_by_the_second_group_only(p):
    for rank in range(p):
        honest = Hsdp(FakeComm(rank, p, tuple(range(p))), NumpyBackend(), 10)
        planted = build("replica-swap-skipped", rank, p)
        assert honest.rounds[0][-1].adds, "the swap adds the other group's sums"
        assert bool(planted.rounds[0][-1].adds) == (honest.k == 0)
        assert len(planted.rounds[0]) == len(honest.rounds[0])


def run(tmp_path, mutant, p=3, momentum="0.9", scenario="kill-before-compute", recovery="respawn",
        strategy="hsdp"):
    out = tmp_path / f"{mutant}-{p}-{momentum}-{recovery}"
    return run_cli("run", "--engine", "sim", "--ranks", str(p), "--strategy", strategy, "--momentum", momentum,
                   "--scenario", scenario, "--recovery", recovery, "--steps", "5", "--samples", "100",
                   "--batch-size", "16", "--run-parts", f"mpibench.selftest.variants:{mutant}", "--out", str(out))


@pytest.mark.parametrize("mutant", ["handover-claims-all", "hsdp-state-lost-on-respawn"])
@pytest.mark.parametrize("p", [3, 4])
def test_a_handover_defect_is_caught_at_the_redone_step_with_state_and_absent_without(tmp_path, mutant, p):
    caught = run(tmp_path, mutant, p)
    assert caught.returncode == 1 and "step 2 invariant" in caught.stdout, caught.stdout[-1500:]
    plain = run(tmp_path, mutant, p, momentum="0")  # no state, no handover: nothing planted runs
    assert plain.returncode == 0 and "verdict: pass" in plain.stdout, plain.stdout[-1500:]


@pytest.mark.parametrize("mutant", ["replica-stale-gather", "replica-swap-skipped"])
@pytest.mark.parametrize("p", [3, 4, 5])
def test_a_replica_defect_is_caught_at_step_0(tmp_path, mutant, p):
    proc = run(tmp_path, mutant, p, momentum="0", scenario="none", recovery="shrink")
    assert proc.returncode == 1 and "step 0 invariant" in proc.stdout, proc.stdout[-1500:]


def test_zero_rings_stale_gather_has_nothing_to_break_in_hsdp_at_3(tmp_path):
    # the last worker is alone in its replica group and owns every shard: it gathers nothing
    lone = run(tmp_path, "stale-gather", 3, momentum="0", scenario="none", recovery="shrink")
    assert lone.returncode == 0 and "verdict: pass" in lone.stdout, lone.stdout[-1500:]
    paired = run(tmp_path, "stale-gather", 4, momentum="0", scenario="none", recovery="shrink")
    assert paired.returncode == 1 and "step 0 invariant 'replicas'" in paired.stdout, paired.stdout[-1500:]


@pytest.mark.parametrize("mutant", ["shard-offset", "owner-steps-twice"])
def test_zero_rings_step_mutants_reach_every_shard_a_member_owns(mutant):
    from mpibench.selftest.variants.sharded import SHARDED_MIXINS

    cls = type("Planted", (SHARDED_MIXINS[mutant], Hsdp), {})
    lone = cls(FakeComm(2, 3, (0, 1, 2)), NumpyBackend(), 10)  # owns shards 0 and 1
    params = NumpyBackend().zeros(10)
    lone.step_buffer[:] = 1.0
    owned, stepped = lone.step_owned(params, 0.1)
    pieces = lone.layout.pieces()
    if mutant == "owner-steps-twice":
        assert owned == [pieces[0], pieces[0], pieces[1], pieces[1]] and len(stepped) == 4
    else:
        assert owned == [pieces[0], (pieces[1][0] - 1, pieces[1][1])]
