"""Sharded data parallelism: layout, the checker's own shard model, optimizer state, faults.

No MPI here: the layout and the ownership model are pure; the strategies are
built on a stand-in communicator (construction sends nothing) to compare their
ownership with the checker's independent model; every named scenario runs under
both sharded strategies and both recoveries on the simulated engine in one child
(tests/drivers/sim_sharded.py). Real-MPI depth: tests/test_sharded_mpi.py.
"""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from mpibench.check import sharded as model
from mpibench.engine.optimizer import refusal
from mpibench.faults import load_schedule
from mpibench.kernels import NumpyBackend
from mpibench.results.calibration import Calibration
from mpibench.sync.ring import ring_cost_s as ring_s
from mpibench.sim.exhaustive import ExhaustivePlan
from mpibench.sync import sharding
from mpibench.sync.registry import BUILTIN, SHARDED
from mpibench.sync.zero_halving import ZeroHalving
from mpibench.sync.zero_ring import ZeroRing
from mpibench.job.bench.sharded import fix_row
from fake_comm import FakeComm
from simrun import run_cli, run_driver

SIZES = [0, 1, 2, 4, 677]  # 0, 1, fewer elements than ranks, uneven


@pytest.mark.parametrize("p", [1, 2, 3, 5])
@pytest.mark.parametrize("n", SIZES)
def test_layout_covers_params_and_buffer_with_a_count_slot_per_shard(p, n):
    layout = sharding.ShardLayout(n, p)
    assert sharding.segments.check_pieces(*zip(*layout.pieces()), n) if n else sum(w for _, w in layout.pieces()) == 0
    offsets, widths = zip(*layout.buffer_pieces())
    assert sharding.segments.check_pieces(list(offsets), list(widths), n + p)
    assert min(widths) >= 1 and max(layout.widths) - min(layout.widths) <= 1
    assert layout.pieces() == model.shard_pieces(n, p)  # the checker's own widths agree


@pytest.mark.parametrize("cls", [ZeroRing, ZeroHalving])
@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("n", [0, 3, 677])
def test_each_rank_owns_what_the_checker_expects_in_any_rank_order(cls, p, n):
    ids = list(range(10, 10 + p))
    random.Random(p * 7 + n).shuffle(ids)  # a replacement can sit at any rank
    shards, owners = model.expected(cls.sharding_kind, tuple(ids), n)
    stepped = []
    for rank in range(p):
        strategy = cls(FakeComm(rank, p, tuple(ids)), NumpyBackend(), n)
        assert strategy.layout.pieces() == shards and strategy.owners() == owners
        shard = strategy.owned_shard()
        if shard is not None:
            assert owners[shard] == ids[rank]
            stepped.append(shards[shard])
    assert sorted(stepped) == sorted(shards)  # every shard has exactly one owner


def test_the_sharded_names_are_those_that_declare_a_cut():
    assert set(SHARDED) == {name for name, cls in BUILTIN.items() if cls.sharding_kind}
    # the checker's reading of case.json files written before strategies declared their cut
    assert model.BEFORE_DECLARED == {name: BUILTIN[name].sharding_kind for name in SHARDED}
    assert set(model.KINDS) == set(sharding.SHARDING_KINDS)


def schedule(name, n=3):
    return load_schedule(name, n)


@pytest.mark.parametrize("strategy,recovery,scenario,refused", [
    ("zero-ring", "shrink", "none", False),
    ("zero-halving", "shrink", "straggler", False),  # everyone waits: nothing re-sharded
    ("zero-ring", "shrink", "kill-mid-gather", True),  # the owner's state has no replica
    ("zero-halving", "respawn", "kill-in-sharded-step", True),
    ("zero-ring", "shrink", "partition-minority", True),
    ("ring", "shrink", "kill-mid-reduction", False),  # replicated state: survivors hold it all
    ("ring", "respawn", "kill-mid-reduction", True),  # the replacement would start without it
    ("rd", "shrink", "partition-heal", True),  # the healed side takes parameters, not state
    ("ps", "shrink", "none", True),  # the server steps a copy
])
def test_momentum_refuses_what_recovery_cannot_rebuild(strategy, recovery, scenario, refused):
    deadline = 0.15 if scenario == "straggler-dropped" else 0.0
    reason = refusal(strategy, 0.9, recovery, schedule(scenario), deadline)
    assert (reason is not None) == refused, reason
    assert refusal(strategy, 0.0, recovery, schedule(scenario), deadline) is None  # no state, nothing lost


def test_a_refused_run_says_why_in_one_line_and_exits_2(tmp_path):
    proc = run_cli("run", "--engine", "sim", "--ranks", "3", "--strategy", "zero-ring", "--momentum", "0.9",
                   "--scenario", "kill-mid-gather", "--steps", "4", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no replica" in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()  # refused before any folder is made


def test_the_checker_models_momentum_and_bites_on_a_wrong_one(tmp_path):
    out = tmp_path / "o"
    proc = run_cli("run", "--engine", "sim", "--ranks", "3", "--strategy", "zero-halving", "--momentum", "0.9",
                   "--scenario", "short-epochs", "--steps", "8", "--out", str(out))
    assert proc.returncode == 0 and "verdict: pass" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = (out / "invariants.csv").read_text()
    assert rows.count(",optimizer_state,true,") == 8 and rows.count(",ownership,true,") == 8
    case = next((out / "history").iterdir()) / "case.json"
    info = json.loads(case.read_text())
    info["config"]["momentum"] = 0.89  # one percent off: the run's updates no longer match
    case.write_text(json.dumps(info))
    proc = run_cli("check", str(out))
    assert proc.returncode == 1 and "equivalence" in proc.stdout, proc.stdout[-2000:]


QUICK = ("kill-mid-scatter", "kill-in-sharded-step", "kill-mid-gather", "kill-owner-0-mid-gather",
         "kill-coordinator", "partition-heal")  # the sharded path's own faults, worker 0's, a heal


def scenarios_pass(tmp_path, ranks: int, names=None) -> dict:
    args = [str(tmp_path), str(ranks)] + ([",".join(names)] if names else [])
    cases = run_driver("sim_sharded.py", *args, timeout_s=900)["cases"]
    bad = {k: v for k, v in cases.items() if v["outcome"] != "ok" or not v["checks"]}
    assert not bad, bad
    return cases


def test_the_sharded_faults_pass_under_both_sharded_strategies_and_recoveries(tmp_path):
    assert len(scenarios_pass(tmp_path, 3, QUICK)) == 2 * 2 * len(QUICK)


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [3, 4])
def test_every_named_scenario_passes_under_both_sharded_strategies_and_recoveries(tmp_path, ranks):
    assert len(scenarios_pass(tmp_path, ranks)) == 2 * 2 * 19  # strategies x recoveries x scenarios


def test_the_exhaustive_plan_kills_in_the_all_gather_only_for_sharded_strategies():
    sharded = ExhaustivePlan(workers=(3,), strategies=("zero-ring",), pairs=False)
    plain = ExhaustivePlan(workers=(3,), strategies=("ring",), pairs=False)
    gather = [k for k in sharded.kill_points(3, "zero-ring") if k.phase == "mid_gather"]
    assert sorted({k.messages for k in gather}) == [1, 2] and not any(
        k.phase == "mid_gather" for k in plain.kill_points(3, "ring"))
    assert sharded.count() == plain.count() + 3 * 3 * 2  # workers x fault steps x all-gather messages


def test_reduce_scatter_and_all_gather_cost_one_ring_allreduce_and_report_nccl_busbw():
    cal = Calibration(2e-6, 1e-9, 3e-10, 5e-10, 0.0, 0.0, 2, 2, 4)
    for p in (2, 3, 8):
        for n in (4096.0, 1 << 24):
            parts = ZeroRing.part_cost_s("reduce-scatter", cal, p, n) + ZeroRing.part_cost_s("all-gather", cal, p, n)
            assert parts == pytest.approx(ring_s(cal, p, n)) == pytest.approx(ZeroRing.cost_s(cal, p, n))
    row = fix_row({"strategy": "zero-ring:all-gather", "ranks": 4, "algbw_gbps": 2.0, "busbw_gbps": 3.0})
    assert row["busbw_gbps"] == pytest.approx(1.5)  # (p-1)/p, not the all-reduce's 2(p-1)/p


@pytest.mark.parametrize("p", [2, 3, 8])
def test_the_modelled_rows_of_the_two_collectives_carry_their_own_busbw_factor(p):
    """The main job's modelled bench rows (results) and bench's own (job/bench/model) both
    give a reduce-scatter or all-gather row busbw = algbw (p-1)/p, the all-reduce rows 2(p-1)/p."""
    from mpibench.job.bench.model import modelled_rows
    from mpibench.results.costmodel import bandwidths_gbps

    cal = Calibration(2e-6, 1e-9, 3e-10, 5e-10, 0.0, 0.0, 2, 2, 4)
    for name, factor in (("zero-ring:reduce-scatter", (p - 1) / p), ("zero-halving:all-gather", (p - 1) / p),
                         ("zero-ring", 2 * (p - 1) / p), ("ring", 2 * (p - 1) / p)):
        algbw, busbw = bandwidths_gbps(name, p, 1 << 20, 1e-3)
        assert busbw == pytest.approx(algbw * factor), name
        measured = {"strategy": name, "ranks": p, "bytes": 1 << 20, "time_max_s": 2e-3}
        (row,), unknown = modelled_rows(cal, [measured], {})
        assert not unknown and row["tag"] == "modelled"
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * factor), name


def test_the_recorded_matrix_covers_every_scenario_on_both_engines_and_came_out_as_expected():
    """lab/data/sharded_matrix.csv (lab/studies/sharded_matrix.py): every named scenario
    under the sharded strategies and both recoveries at p = 2, 3, 4, on MPI and simulated, with
    and without momentum (on MPI the refusals at p = 3 only); each
    run passed, each combination that refusal() names was refused."""
    import csv
    from pathlib import Path

    from mpibench.faults.scenarios import ALL_SCENARIOS

    rows = list(csv.DictReader((Path(__file__).parents[1] / "lab" / "data" / "sharded_matrix.csv").open()))
    have = {(r["engine"], int(r["workers"]), r["strategy"], r["scenario"], r["recovery"], float(r["momentum"]))
            for r in rows}
    for engine in ("mpi", "sim"):
        for p in (2, 3, 4):
            for strategy in ("zero-ring", "zero-halving", "hsdp"):
                for name, (_, smallest) in ALL_SCENARIOS.items():
                    for recovery in ("shrink", "respawn"):
                        for momentum in (0.0, 0.9):
                            schedule = load_schedule(name, p) if p >= smallest else None
                            refused = schedule is not None and refusal(
                                strategy, momentum, recovery, schedule,
                                dict(schedule.options).get("straggler_deadline", 0.0))
                            on_mpi = not refused or p == 3
                            wanted = p >= smallest and (engine == "sim" or on_mpi)
                            key = (engine, p, strategy, name, recovery, momentum)
                            assert (key in have) == wanted, key
    bad = [r for r in rows if r["outcome"] != r["expected"] or (r["expected"] == "ok" and not int(r["checks"]))]
    assert not bad, bad
    assert {r["expected"] for r in rows} == {"ok", "refused"}
