"""HSDP (``hsdp``): shards within two replica groups, replicas across them, on the simulated engine.

The layout against the checker's own model at every p (uneven groups, one
member), what momentum refuses and what it now survives (a dead owner's state
handed over from its replica, shrink and respawn), every invariant passing
over seeds, and the checker biting on planted evidence: state reset to zero,
owners of a replica-less layout, a replica that gathered other bits.
"""
from __future__ import annotations

import base64
import json
import random

import numpy as np
import pytest

from mpibench.check import sharded as model
from mpibench.check.invariants.coverage import gap
from mpibench.engine.optimizer import MomentumState, refusal
from mpibench.faults import load_schedule
from mpibench.kernels import NumpyBackend
from mpibench.sync.hsdp import Hsdp, lost_shards
from mpibench.sync.state_handover import StateLost, hand_over
from fake_comm import FakeComm
from simrun import run_cli


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("n", [0, 3, 677])
def test_each_replica_group_owns_every_element_once_as_the_checker_models_it(p, n):
    ids = list(range(10, 10 + p))
    random.Random(p * 11 + n).shuffle(ids)  # a replacement can sit at any rank
    shards, owners = model.expected("replica-halves", tuple(ids), n)
    groups = model.replica_groups("replica-halves", ids)
    assert len(groups) == (1 if p == 1 else 2) and sorted(sum(groups, [])) == sorted(ids)
    stepped = {k: [] for k in range(len(groups))}
    for rank in range(p):
        strategy = Hsdp(FakeComm(rank, p, tuple(ids)), NumpyBackend(), n)
        assert strategy.layout.pieces() * len(groups) == shards and strategy.owners() == owners
        mine = [strategy.layout.pieces()[i] for i in strategy.owned_shards()]
        assert mine, "every member owns at least one shard"
        k = next(k for k, g in enumerate(groups) if ids[rank] in g)
        stepped[k] += mine
        assert all(owners[k * strategy.layout.count + i] == ids[rank] for i in strategy.owned_shards())
    for k, pieces in stepped.items():  # each group covers the parameters exactly once
        assert gap(pieces, n) is None, (k, pieces)


def test_a_shard_is_lost_only_when_both_its_owners_die():
    assert lost_shards([0, 1, 2, 3], {0, 1}) == []  # one whole group: the other holds everything
    assert lost_shards([0, 1, 2, 3], {0, 2}) == [0]  # both owners of shard 0
    assert lost_shards([0, 1, 2], {1, 2}) == [1]  # the lone member of the small group owns 0 and 1
    assert lost_shards([5], {5}) == [0]  # one member: no replica


@pytest.mark.parametrize("recovery,scenario,n,refused", [
    ("shrink", "kill-in-sharded-step", 3, False),  # the replica in the other group holds the state
    ("respawn", "kill-mid-gather", 3, False),  # the replacement is handed it
    ("respawn", "kill-owner-0-mid-gather", 2, False),
    ("shrink", "cascade", 4, False),  # two deaths in one group: the other holds every shard
    ("shrink", "cascade", 3, True),  # workers 1 and 2 are both owners of shard 1
    ("shrink", "partition-heal", 3, True),  # a rejoining worker's state is stale
    ("shrink", "straggler-dropped", 3, True),
    ("shrink", "straggler", 3, False),  # everyone waits: nothing re-sharded
])
def test_momentum_refuses_only_what_no_replica_holds(recovery, scenario, n, refused):
    deadline = 0.15 if scenario == "straggler-dropped" else 0.0
    reason = refusal("hsdp", 0.9, recovery, load_schedule(scenario, n), deadline)
    assert (reason is not None) == refused, reason
    assert refusal("hsdp", 0.0, recovery, load_schedule(scenario, n), deadline) is None


def test_a_handover_that_finds_no_holder_fails_loudly_instead_of_restarting_at_zero():
    params = np.zeros(10, dtype=np.float32)
    state = MomentumState(0.9, params)
    state.slices = {0: np.ones(5, dtype=np.float32)}  # held: [0, 5); owned now: [0, 10)
    with pytest.raises(StateLost, match="element 5"):
        hand_over(FakeComm(0, 1, (0,)), NumpyBackend(), state, {0: [(0, 10)]}, [(0, 10)], 54)
    state.slices = {0: np.ones(5, dtype=np.float32), 5: np.full(5, 2.0, dtype=np.float32)}
    hand_over(FakeComm(0, 1, (0,)), NumpyBackend(), state, {0: [(0, 10)]}, [(0, 10)], 54)
    assert list(state.slices) == [0] and state.slices[0].tolist() == [1.0] * 5 + [2.0] * 5


def run(tmp_path, p, scenario, recovery, seed=0, momentum="0.9", steps=5):
    out = tmp_path / f"p{p}-{scenario}-{recovery}-{seed}"
    proc = run_cli("run", "--engine", "sim", "--ranks", str(p), "--strategy", "hsdp", "--momentum", momentum,
                   "--scenario", scenario, "--recovery", recovery, "--seed", str(seed), "--steps", str(steps),
                   "--out", str(out))
    return proc, out


@pytest.mark.parametrize("p,scenario", [(1, "none"), (2, "kill-owner-0-mid-gather"), (3, "kill-in-sharded-step"),
                                        (4, "kill-mid-scatter"), (5, "kill-mid-gather")])
@pytest.mark.parametrize("recovery", ["shrink", "respawn"])
@pytest.mark.parametrize("seed", [0, 3])
def test_a_dead_owners_state_is_recovered_from_its_replica_and_every_invariant_holds(tmp_path, p, scenario,
                                                                                      recovery, seed):
    proc, out = run(tmp_path, p, scenario, recovery, seed)
    assert proc.returncode == 0 and "verdict: pass" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = (out / "invariants.csv").read_text()
    for name in ("ownership", "gathered", "optimizer_state", "equivalence"):
        assert rows.count(f",{name},true,") == 5 and f",{name},false," not in rows, name
    if p > 1:
        assert "kill" in (out / "faults.csv").read_text()
        assert "2 replica groups" in rows


def test_a_refused_hsdp_run_says_why_in_one_line_and_exits_2(tmp_path):
    proc, out = run(tmp_path, 3, "cascade", "shrink")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "both replicas" in lines[0], proc.stderr
    assert not out.exists()


def _records(out):
    folder = next((out / "history").iterdir())
    return {f: [json.loads(line) for line in f.read_text().splitlines()] for f in sorted(folder.glob("*.jsonl"))}


def _rewrite(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("plant,invariant", [("state-reset", "optimizer_state"), ("no-replicas", "ownership"),
                                             ("replica-gathered-other", "gathered")])
def test_the_checker_bites_on_planted_hsdp_evidence(tmp_path, plant, invariant):
    proc, out = run(tmp_path, 3, "kill-in-sharded-step", "respawn")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    files = _records(out)
    path = next(f for f in files if "joined" in f.name)  # the replacement, handed its state at step 2
    records = files[path]
    attempt = next(r for r in records if r.get("kind") == "attempt" and r["step"] == 2)
    if plant == "state-reset":  # as if the handover had restarted the state at zero
        attempt["optimizer"] = [[o, n, base64.b64encode(np.zeros(n, "<f4").tobytes()).decode()]
                                for o, n, _ in attempt["optimizer"]]
    elif plant == "no-replicas":  # owners as if one group of three held one shard each
        shards, owners = model.expected("shard-per-member", tuple(attempt["group"]), 676)
        attempt["sharding"]["shards"], attempt["sharding"]["owners"] = [list(s) for s in shards], list(owners)
    else:
        attempt["sharding"]["gathered"][0] = "0" * 32
    _rewrite(path, records)
    check = run_cli("check", str(out))
    assert check.returncode == 1 and invariant in check.stdout, check.stdout[-2000:]
