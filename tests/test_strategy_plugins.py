"""Third-party strategies: installed from tests/plugins/ and checked like the built-in ones.

The example packages are pip-installed (with their entry points) into a
temporary folder put on ``PYTHONPATH`` for every launched process:
``gather-bcast`` is honest and must pass ``run``, ``bench``, ``sweep`` and
``selftest --strategy``; ``unweighted-example`` averages the workers' mean
gradients and must be caught, naming the invariant and the step. Two are
all-reduces written by others and adapted with the documented calls only
(docs/strategy-api.md): ``mpi4py-tree`` (mpi4py's demo reductions) is correct;
``tutorial-ring`` (PyTorch's distributed tutorial) adds in a different order on
every rank, and ``replicas`` catches it at step 0.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpirun import mpirun_command, run_cli, run_mpi

PLUGINS = Path(__file__).parent / "plugins"

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The example plugins pip-installed into a fresh folder on PYTHONPATH."""
    work = tmp_path_factory.mktemp("plugins")
    target = work / "site"
    sources = []
    for name in ("example_strategy", "unweighted_strategy", "third_party_allreduce"):
        shutil.copytree(PLUGINS / name, work / name)  # builds write next to the sources
        sources.append(str(work / name))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                           *sources], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), before]))
    yield target
    if before is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = before


def test_strategies_lists_the_installed_plugins(installed):
    job = run_cli(["strategies"])
    assert job.returncode == 0, job.text
    lines = {line.split()[0]: line for line in job.stdout.splitlines()}
    assert "plugin mpibench-example-strategy" in lines["gather-bcast"]
    assert "plugin mpibench-unweighted-strategy" in lines["unweighted-example"]
    assert "plugin mpibench-third-party-allreduce" in lines["mpi4py-tree"] and "mpi4py's demo" in lines["mpi4py-tree"]
    assert "plugin mpibench-third-party-allreduce" in lines["tutorial-ring"]
    assert {"ring", "rd", "rabenseifner", "hier", "auto"} <= set(lines)


@pytest.mark.parametrize("name", ["gather-bcast", "mpibench_example_strategy:GatherBroadcast"])
def test_plugin_runs_a_fault_scenario_holding_every_invariant(installed, tmp_path, name):
    job = run_mpi(3, ["run", "--strategy", name, "--scenario", "kill-mid-reduction", "--steps", "4"],
                  out=tmp_path, timeout=120)
    assert job.returncode == 0, job.text[-3000:]
    invariants = job.csv("invariants.csv")
    assert len(invariants) >= 6 * 4 - 6 and (invariants.passed.astype(str).str.lower() == "true").all()
    assert (job.csv("faults.csv").kind == "kill").any()


def test_plugin_in_bench_with_its_own_cost(installed, tmp_path):
    job = run_mpi(3, ["bench", "--strategies", "gather-bcast,native", "--sizes", "4K,64K",
                      "--iterations", "3", "--warmup", "1"], out=tmp_path, timeout=120)
    assert job.returncode == 0, job.text[-3000:]
    bench = job.csv("bench.csv")
    mine = bench[bench.strategy == "gather-bcast"]
    measured, modelled = mine[mine.tag == "measured"], mine[mine.tag == "modelled"]
    assert len(measured) == 2 and (measured.errors.astype(int) == 0).all()
    assert len(modelled) == 2  # from the plugin's own cost function, one per measured row


def test_plugin_in_a_sweep(installed, tmp_path):
    job = run_cli(["sweep", "--strategies", "gather-bcast", "--seeds", "2", "--workers", "3",
                   "--steps", "5", "--out", str(tmp_path), "--mpiexec", " ".join(mpirun_command())],
                  timeout=400)
    assert job.returncode == 0, job.text[-3000:]
    rows = (tmp_path / "sweep.csv").read_text().splitlines()
    assert len(rows) == 3 and all("gather-bcast" in r for r in rows[1:])


def test_selftest_passes_the_honest_plugin(installed, tmp_path):
    job = run_cli(["selftest", "--strategy", "gather-bcast", "--out", str(tmp_path),
                   "--mpiexec", " ".join(mpirun_command())], timeout=400)
    assert job.returncode == 0, job.text[-3000:]
    from mpibench.selftest.drive import strategy_trials

    runs = len(strategy_trials("gather-bcast"))  # no faults, then each distinct planted fault once
    assert job.stdout.count("survived: every invariant held") == runs == 8, job.stdout
    assert f"gather-bcast survived {runs} of {runs} planted faults" in job.stdout, job.stdout
    assert "late-worker-dropped" in job.stdout, job.stdout
    late = (tmp_path / "gather-bcast_late-worker-dropped" / "run" / "steps.csv").read_text()
    assert "2:late" in late, late  # the drop path ran: worker 2 left out of steps 1 and 2 as late


def test_selftest_catches_the_unweighted_plugin_naming_invariant_and_step(installed, tmp_path):
    job = run_cli(["selftest", "--strategy", "unweighted-example", "--out", str(tmp_path),
                   "--mpiexec", " ".join(mpirun_command())], timeout=400)
    assert job.returncode == 1, job.text[-3000:]
    assert "BAD unweighted-example/no-faults" in job.stdout, job.stdout
    assert "FAILED: equivalence at step" in job.stdout and "must not be" not in job.stdout, job.stdout
    assert "      replay: " in job.stdout and "unweighted-example survived" in job.stdout, job.stdout


def test_run_names_the_unweighted_plugins_first_violation(installed, tmp_path):
    job = run_mpi(3, ["run", "--strategy", "unweighted-example", "--steps", "6", "--samples", "100",
                      "--batch-size", "16"], out=tmp_path, timeout=120)
    assert job.returncode == 1, job.text[-3000:]
    invariants = job.csv("invariants.csv")
    failed = invariants[invariants.passed.astype(str).str.lower() == "false"]
    assert "equivalence" in set(failed.invariant)
    first = int(failed.step.astype(int).min())
    assert f"step {first}" in job.text and "equivalence" in job.text


def first_violation(out):
    import json

    return json.loads((out / "verdict.json").read_text())["first_violation"]


@pytest.mark.parametrize("workers,scenario", [
    (3, "kill-mid-reduction"),
    pytest.param(4, "partition-heal", marks=pytest.mark.slow),  # selftest --strategy runs it too (slow)
    pytest.param(5, "none", marks=pytest.mark.slow)])  # 5 ranks: the demo's extra message from rank 3 to 1
def test_the_mpi4py_tree_plugin_holds_every_invariant(installed, tmp_path, workers, scenario):
    job = run_mpi(workers, ["run", "--strategy", "mpi4py-tree", "--scenario", scenario, "--steps", "5",
                            "--samples", "100", "--batch-size", "16"], out=tmp_path, timeout=150)
    assert job.returncode == 0, job.text[-3000:]
    assert "verdict: pass" in job.stdout and first_violation(tmp_path) is None


def test_the_tutorial_ring_plugin_is_caught_by_replicas_at_step_0(installed, tmp_path):
    job = run_mpi(3, ["run", "--strategy", "tutorial-ring", "--steps", "4", "--samples", "100",
                      "--batch-size", "16"], out=tmp_path, timeout=150)
    assert job.returncode == 1, job.text[-3000:]
    first = first_violation(tmp_path)
    assert (first["step"], first["invariant"]) == (0, "replicas"), first
    assert "parameters differ after the commit" in first["detail"]


NONE_PLUGIN = """
from mpibench.sync.base import Reduction, SyncStrategy


class NoneReduce(SyncStrategy):
    name = "none-reduce"

    def reduce(self, buf):
        self.comm.allreduce(buf.copy(), buf)  # the sum is right; the return value is missing


class NoneSynchronize(SyncStrategy):
    name = "none-synchronize"

    def reduce(self, buf):
        self.comm.allreduce(buf.copy(), buf)
        return Reduction(self.comm.worker_ids, [(0, len(buf))], len(buf))

    def synchronize(self, params, grad_sum, count, lr):
        super().synchronize(params, grad_sum, count, lr)  # the update is applied; nothing returned
"""


@pytest.mark.parametrize("engine,cls,call", [
    ("mpi", "NoneReduce", "reduce()"), ("sim", "NoneReduce", "reduce()"), ("sim", "NoneSynchronize", "synchronize()"),
    pytest.param("mpi", "NoneSynchronize", "synchronize()", marks=pytest.mark.slow)])  # the same code as on sim
def test_a_strategy_returning_none_ends_the_run_with_one_line_naming_it(tmp_path, engine, cls, call):
    (tmp_path / "returns_none.py").write_text(NONE_PLUGIN)
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), before]))
    try:
        args = ["run", "--strategy", f"returns_none:{cls}", "--steps", "3"]
        if engine == "sim":
            job = run_cli(args + ["--engine", "sim", "--ranks", "3", "--out", str(tmp_path / "out")], timeout=120)
        else:
            job = run_mpi(3, args, out=tmp_path / "out", timeout=120)
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
    assert job.returncode == 2, job.text[-3000:]
    lines = [line for line in job.stderr.splitlines() if "mpibench: error:" in line]
    assert len(lines) == 1 and "Traceback" not in job.text, job.text[-3000:]
    assert f"strategy 'none-{cls[4:].lower()}' (returns_none:{cls}): {call} returned None" in lines[0], lines


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["mpi4py-tree", "tutorial-ring"])
def test_selftest_of_the_third_party_plugins(installed, tmp_path, strategy):
    job = run_cli(["selftest", "--strategy", strategy, "--out", str(tmp_path),
                   "--mpiexec", " ".join(mpirun_command())], timeout=600)
    if strategy == "mpi4py-tree":
        assert job.returncode == 0, job.text[-3000:]
    else:
        assert job.returncode == 1, job.text[-3000:]
        assert "FAILED: replicas at step 0" in job.stdout, job.stdout
        assert "tutorial-ring survived 0 of 8 planted faults" in job.stdout, job.stdout
