"""An outside sharded strategy is judged like a built-in one: its declared cut (sharding_kind)
goes into case.json, and the checker's ownership, gathered and optimizer-state invariants hold it
to its own model of that cut, whatever the strategy is called (mpibench.check.sharded)."""
from __future__ import annotations

import csv
import json
import os
import sys
import textwrap

import pytest

from tests.mpirun import mpi_env, mpirun_command, run_command

PLUGIN = textwrap.dedent('''
    from mpibench.sync.zero_ring import ZeroRing


    class MyZero(ZeroRing):
        """An outside ZeRO: the ring's reduce-scatter and all-gather under another name."""
        name = "my-zero"


    class MisdeclaredZero(ZeroRing):
        """Cuts as zero-ring does but declares the halving fold's cut: its owners are not the ones it says."""
        name = "misdeclared-zero"
        sharding_kind = "halving-core"


    class Undeclared(ZeroRing):
        name = "undeclared-zero"
        sharding_kind = None


    class ReduceToOwner(ZeroRing):
        """ZeRO-2 as DeepSpeed's stage 2 moves gradients: each shard reduced to its owner
        (MPI_Reduce, root = owner), then the ring's all-gather of the stepped shards."""
        name = "reduce-to-owner"

        def scatter_shards(self):
            layout = self.layout
            for shard in range(layout.count):
                o, w = int(layout.buffer_offsets[shard]), int(layout.buffer_widths[shard])
                piece, owner = self.step_buffer[o:o + w], self.ring[shard]
                self.comm.reduce(piece.copy(), piece if self.comm.rank == owner else None, root=owner)


    from mpibench.sync.ring import RingAllreduce


    class CopyStepper(RingAllreduce):
        """Declares that it steps a copy of the parameters, as a parameter server does."""
        name = "copy-stepper"
        steps_in_place = False
''')


@pytest.fixture
def plugin_env(tmp_path):
    package = tmp_path / "plugins" / "outside_zero"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN)
    env = mpi_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "plugins"), env.get("PYTHONPATH")]))
    return env


def launch(engine, ranks, cls, out, env, scenario="none", recovery="shrink"):
    args = ["run", "--strategy", f"outside_zero:{cls}", "--scenario", scenario, "--steps", "6",
            "--recovery", recovery, "--out", str(out)]
    if engine == "sim":
        cmd = [sys.executable, "-m", "mpibench", *args, "--engine", "sim", "--ranks", str(ranks)]
    else:
        cmd = [*mpirun_command(), "-n", str(ranks), sys.executable, "-m", "mpibench", *args]
    return run_command(cmd, timeout=180, out=out, env=env)


def checks_of(out, invariant):
    with open(out / "invariants.csv") as fh:
        return [r for r in csv.DictReader(fh) if r["invariant"] == invariant]


@pytest.mark.mpi
@pytest.mark.parametrize("engine", ["sim", "mpi"])
def test_an_outside_sharded_strategy_has_its_ownership_judged(engine, tmp_path, plugin_env):
    out = tmp_path / "run"
    job = launch(engine, 3, "MyZero", out, plugin_env, scenario="kill-mid-reduction")
    assert job.returncode == 0, job.text[-3000:]
    case = next((out / "history").glob("*/case.json"))
    assert json.loads(case.read_text())["sharding"] == "shard-per-member"
    for invariant in ("ownership", "gathered"):
        rows = checks_of(out, invariant)
        assert rows and all(r["passed"] == "true" for r in rows), (invariant, rows[:3])


@pytest.mark.mpi
@pytest.mark.parametrize("engine", ["sim", "mpi"])
def test_a_strategy_whose_owners_are_not_its_declared_cut_is_caught(engine, tmp_path, plugin_env):
    out = tmp_path / "run"
    job = launch(engine, 3, "MisdeclaredZero", out, plugin_env)
    assert job.returncode == 1, job.text[-3000:]
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == "fail" and "ownership" in json.dumps(verdict), verdict


def test_a_sharded_strategy_that_declares_no_cut_is_refused_in_one_line(tmp_path, plugin_env):
    out = tmp_path / "run"
    job = launch("sim", 2, "Undeclared", out, plugin_env)
    assert job.returncode == 2, job.text[-2000:]
    assert "declares no sharding_kind" in job.stderr and "Traceback" not in job.text
    assert not out.exists()


@pytest.mark.mpi
@pytest.mark.parametrize("engine,recovery", [("sim", "shrink"), ("sim", "respawn"), ("mpi", "respawn")])
def test_a_zero2_that_reduces_each_shard_to_its_owner_keeps_that_traffic_and_is_judged(engine, recovery, tmp_path,
                                                                                      plugin_env):
    out = tmp_path / "run"
    job = launch(engine, 4, "ReduceToOwner", out, plugin_env, scenario="kill-mid-reduction", recovery=recovery)
    assert job.returncode == 0, job.text[-3000:]
    case = next((out / "history").glob("*/case.json"))
    assert json.loads(case.read_text())["sharding"] == "shard-per-member"
    for invariant in ("ownership", "gathered", "equivalence"):
        rows = checks_of(out, invariant)
        assert rows and all(r["passed"] == "true" for r in rows), (invariant, rows[:3])
    with open(out / "faults.csv") as fh:
        kills = [r for r in csv.DictReader(fh) if r["kind"] == "kill"]
    assert kills and kills[0]["phase"] == "mid_reduction", kills


@pytest.fixture
def plugin_importable(tmp_path, monkeypatch, plugin_env):
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    yield
    for name in [m for m in sys.modules if m.startswith("outside_zero")]:
        del sys.modules[name]


@pytest.mark.parametrize("scenario", ["kill-mid-reduction", "partition-heal", "none"])
def test_momentum_refusals_follow_what_a_plugin_declares_not_its_name(scenario, plugin_importable):
    """A plugin of zero-ring's cut is refused what zero-ring is refused, word for word once the
    name is swapped; one that steps a copy is refused as the parameter server is."""
    from mpibench.engine.optimizer import refusal
    from mpibench.faults import load_schedule

    plan = load_schedule(scenario, 3)
    builtin = refusal("zero-ring", 0.9, "shrink", plan)
    outside = refusal("outside_zero:MyZero", 0.9, "shrink", plan)
    assert (builtin is None) == (outside is None) == (scenario == "none")
    if builtin:
        assert outside == builtin.replace("zero-ring", "outside_zero:MyZero")
    copy = refusal("outside_zero:CopyStepper", 0.9, "shrink", plan)
    assert copy == refusal("ps", 0.9, "shrink", plan).replace("ps steps", "outside_zero:CopyStepper steps")
    assert refusal("outside_zero:CopyStepper", 0.0, "shrink", plan) is None


@pytest.mark.parametrize("p", [2, 3])
def test_the_exhaustive_plan_kills_a_sharded_plugin_in_its_all_gather(p, plugin_importable):
    from mpibench.sim.exhaustive import ExhaustivePlan

    plan = ExhaustivePlan(workers=(p,), pairs=False)
    gather = [k for k in plan.kill_points(p, "outside_zero:MyZero") if k.phase == "mid_gather"]
    assert gather == [k for k in plan.kill_points(p, "zero-ring") if k.phase == "mid_gather"] and gather
    assert not any(k.phase == "mid_gather" for k in plan.kill_points(p, "outside_zero:CopyStepper"))


def test_a_simulated_exhaustive_sweep_of_a_sharded_plugin_finds_nothing_on_honest_code(tmp_path, plugin_env):
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "mpibench", "sweep", "--engine", "sim", "--exhaustive", "--workers", "2",
           "--strategies", "outside_zero:MyZero", "--recoveries", "shrink", "--no-replay-on-mpi", "--out", str(out)]
    job = run_command(cmd, timeout=300, out=out, env=plugin_env)
    assert job.returncode == 0, job.text[-3000:]
    from mpibench.sim.exhaustive import ExhaustivePlan

    summary = json.loads((out / "sweep.json").read_text())
    # zero-ring's plan, its all-gather kills included (ring's has 54 at p = 2), every case ok
    expected = ExhaustivePlan(workers=(2,)).block_count(2, "zero-ring")
    assert expected > ExhaustivePlan(workers=(2,)).block_count(2, "ring")
    assert summary["cases"] == summary["plan_cases"] == expected, summary
    assert summary["findings"] == 0 and summary["by_outcome"] == {"ok": expected}, summary


@pytest.mark.mpi
def test_the_selftest_of_a_sharded_plugin_judges_its_ownership_under_every_planted_fault(tmp_path, plugin_env):
    out = tmp_path / "selftest"
    cmd = [sys.executable, "-m", "mpibench", "selftest", "--strategy", "outside_zero:MyZero", "--out", str(out)]
    job = run_command(cmd, timeout=600, out=out, env=plugin_env)
    assert job.returncode == 0, job.text[-3000:]
    runs = sorted(out.glob("*/run/invariants.csv"))
    assert len(runs) == 8, runs  # no faults, then each planted fault once
    for path in runs:
        with open(path) as fh:
            judged = {r["invariant"] for r in csv.DictReader(fh) if r["passed"] == "true"}
        assert {"ownership", "gathered", "equivalence"} <= judged, (path, judged)


@pytest.mark.mpi
def test_the_selftest_of_a_misdeclared_sharded_plugin_fails_on_ownership(tmp_path, plugin_env):
    out = tmp_path / "selftest"
    cmd = [sys.executable, "-m", "mpibench", "selftest", "--strategy", "outside_zero:MisdeclaredZero",
           "--out", str(out)]
    job = run_command(cmd, timeout=600, out=out, env=plugin_env)
    assert job.returncode == 1, job.text[-3000:]
    assert "ownership" in job.stdout, job.stdout[-2000:]
