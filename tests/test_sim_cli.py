"""``run --engine sim`` from the command line (mpibench.sim.cli_entry, .jobs): exit statuses, output, check.

A simulated run exits as the real one would: 0 when every invariant held,
1 with the violation named when a known-bad reduction runs, 2 with one line
for bad input; ``python -m mpibench check DIR`` rebuilds the same verdict
from the simulated history; every strategy runs on it.
"""
from __future__ import annotations

import json

import pytest

import os
import subprocess
import sys

from simrun import ROOT, run_cli

STRATEGIES = ["ring", "ps", "rabenseifner", "hier", "auto"]  # rd: test_sim_determinism


def sim_run(out, *args):
    return run_cli("run", "--engine", "sim", "--out", str(out), "--steps", "4", *args)


@pytest.mark.parametrize("strategy,ranks", [(s, 3) for s in STRATEGIES] + [("native", 1), ("ring", 2)])
def test_every_strategy_passes_simulated(tmp_path, strategy, ranks):
    proc = sim_run(tmp_path / "out", "--ranks", str(ranks), "--strategy", strategy, "--scenario", "short-epochs")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "engine sim [simulated]" in proc.stdout
    assert "verdict: pass" in proc.stdout


def test_a_mutant_is_a_violation_and_check_rebuilds_the_verdict(tmp_path):
    out = tmp_path / "out"
    proc = sim_run(out, "--ranks", "3", "--strategy", "ring", "--run-parts", "mpibench.selftest.variants:offset-blind",
                   "--samples", "100", "--batch-size", "16")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "violation" in proc.stdout
    online = json.loads((out / "verdict.json").read_text())
    (out / "verdict.json").unlink()
    again = run_cli("check", str(out))
    assert again.returncode == 1
    offline = json.loads((out / "verdict.json").read_text())
    assert offline["verdict"] == online["verdict"] == "fail"


def test_a_kill_with_respawn_passes_and_is_in_the_fault_log(tmp_path):
    out = tmp_path / "out"
    proc = sim_run(out, "--ranks", "4", "--strategy", "ps", "--scenario", "kill-mid-reduction",
                   "--recovery", "respawn")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    faults = (out / "faults.csv").read_text()
    assert ",kill," in faults and ",respawn," in faults
    assert "(+1 spawned)" in proc.stdout


@pytest.mark.parametrize("args,words", [
    (["--ranks", "0"], "--ranks"),
    (["--scenario", "no-such-scenario"], "unknown scenario"),
    (["--platform", "/no/such/file.toml"], "cannot read platform"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    proc = sim_run(tmp_path / "out", *args)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_main_job_runs_its_scenarios_simulated_without_benchmarks(tmp_path):
    out = tmp_path / "main"
    env = {**os.environ, "MPIBENCH_SCENARIOS": "none,kill-mid-reduction", "MPIBENCH_NO_SWEEP": "1"}
    proc = subprocess.run([sys.executable, "-m", "mpibench", "--engine", "sim", "--ranks", "3", "--steps", "3",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "kill-mid-reduction" in proc.stdout and "verdict: pass" in proc.stdout
    assert not (out / "bench.csv").exists()  # measurements of the host are never made on the simulator
