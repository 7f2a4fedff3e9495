"""Adam under real MPI (ULFM) and in an outside strategy: a death mid-reduction, hsdp handing a
dead owner's m, v and t over to its replacement, and an MPI-Adam helper adapted as a strategy
plugin (its own all-reduce over ``self.comm``; the engine applies Adam), each judged pass.
"""
from __future__ import annotations

import os
import sys
import textwrap

import pytest

from mpirun import mpi_env, mpirun_command, run_command, run_mpi

SMALL = ["--steps", "5", "--samples", "90", "--batch-size", "8"]


def all_true(job, invariants=("equivalence", "optimizer_state", "replicas")):
    rows = job.csv("invariants.csv")
    assert set(rows.invariant) >= set(invariants)
    passed = rows.passed.astype(str).str.lower() == "true"
    assert passed.all(), rows[~passed]
    assert len(set(rows[rows.invariant == "optimizer_state"].step)) == 5
    assert rows[rows.invariant == "optimizer_state"].detail.str.contains("step count t").all()


@pytest.mark.mpi
@pytest.mark.parametrize("optimizer", [["--optimizer", "adam"], ["--optimizer", "adamw", "--weight-decay", "0.1"]])
def test_adam_survives_a_death_mid_reduction_on_the_ring(tmp_path, optimizer):
    job = run_mpi(3, ["run", "--strategy", "ring", "--scenario", "kill-mid-reduction", "--recovery", "shrink",
                      *optimizer, *SMALL], out=tmp_path, timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    all_true(job)
    assert (job.csv("faults.csv").kind == "kill").any()


@pytest.mark.mpi
def test_zero_ring_steps_adam_on_its_shards_and_refuses_a_death_that_would_lose_one(tmp_path):
    job = run_mpi(3, ["run", "--strategy", "zero-ring", "--scenario", "none", "--optimizer", "adam", *SMALL],
                  out=tmp_path / "none", timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    all_true(job, ("equivalence", "optimizer_state", "ownership", "gathered"))
    refused = run_mpi(3, ["run", "--strategy", "zero-ring", "--scenario", "kill-mid-reduction", "--optimizer", "adam",
                          *SMALL], out=tmp_path / "kill", timeout=120)
    lines = {line.split("] ", 1)[-1] for line in refused.stderr.splitlines() if "no replica" in line}
    assert refused.returncode == 2 and len(lines) == 1, refused.text[-3000:]
    assert "optimizer state" in lines.pop() and not (tmp_path / "kill").exists()


@pytest.mark.mpi
def test_hsdp_hands_adams_state_over_to_a_replacement(tmp_path):
    job = run_mpi(3, ["run", "--strategy", "hsdp", "--optimizer", "adam", "--scenario", "kill-in-sharded-step",
                      "--recovery", "respawn", *SMALL], out=tmp_path, timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    all_true(job, ("equivalence", "optimizer_state", "ownership", "gathered"))
    assert any(f.name.startswith("worker-") and ".joined-" in f.name for f in (tmp_path / "history").rglob("*.jsonl"))


MPI_ADAM = textwrap.dedent('''
    from mpibench.sync.base import Reduction, SyncStrategy


    class MpiAdam(SyncStrategy):
        """An MPI-Adam helper as a strategy: it all-reduces [gradient sums..., count] itself over
        self.comm; SyncStrategy.synchronize hands the sums and the count to the engine's
        apply_update, where the engine's Adam steps the parameters (the helper keeps no m or v)."""

        name = "mpi-adam"
        summary = "an outside MPI-Adam: its own all-reduce, the engine's Adam"

        def reduce(self, buf):
            total = self.backend.empty(len(buf))
            self.comm.allreduce(buf, total)
            buf[:] = total
            return Reduction(self.comm.worker_ids, [(0, len(buf))], len(buf))
''')


@pytest.fixture
def plugin_env(tmp_path):
    package = tmp_path / "plugins" / "outside_adam"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(MPI_ADAM)
    env = mpi_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "plugins"), env.get("PYTHONPATH")]))
    return env


@pytest.mark.mpi
@pytest.mark.parametrize("engine", ["sim", "mpi"])
def test_an_mpi_adam_plugin_lets_the_engine_apply_adam_and_is_judged_pass(tmp_path, plugin_env, engine):
    out = tmp_path / "run"
    args = ["run", "--strategy", "outside_adam:MpiAdam", "--scenario", "kill-mid-reduction", "--recovery", "shrink",
            "--optimizer", "adam", *SMALL, "--out", str(out)]
    if engine == "sim":
        cmd = [sys.executable, "-m", "mpibench", *args, "--engine", "sim", "--ranks", "3"]
    else:
        cmd = [*mpirun_command(), "-n", "3", sys.executable, "-m", "mpibench", *args]
    job = run_command(cmd, timeout=240, out=out, env=plugin_env)
    assert job.returncode == 0 and "verdict: pass" in job.stdout, job.text[-3000:]
    all_true(job)
    assert (job.csv("faults.csv").kind == "kill").any()
