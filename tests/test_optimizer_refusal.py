"""``--optimizer sgd|adam|adamw`` and its settings: bad values are one line and exit 2, the
settings land in case.json and run.json, and every refusal of optimizer state (engine/optimizer.py
``refusal``: state a kill, a cut or a respawn would lose, a strategy that steps a copy) applies
to Adam as it does to momentum.

The honest control the self-test cannot have (``state-lost-on-respawn``: zero-ring with optimizer
state under respawn, mpibench/selftest/drive.py NO_CONTROL) is the refusal checked here.
"""
from __future__ import annotations

import json

import pytest

from mpibench.base.config import RunConfig, UsageError, has_optimizer_state
from mpibench.engine.optimizer import check_supported, refusal
from mpibench.faults import load_schedule
from simrun import run_cli

BAD = [
    ({"optimizer": "rmsprop"}, "--optimizer must be one of sgd, adam, adamw"),
    ({"optimizer": "adam", "beta1": 1.0}, "--beta1 must be at least 0 and below 1"),
    ({"optimizer": "adam", "beta2": -0.1}, "--beta2 must be at least 0 and below 1"),
    ({"optimizer": "adamw", "beta2": float("nan")}, "--beta2 must be at least 0 and below 1"),
    ({"optimizer": "adam", "adam_eps": 0.0}, "--adam-eps must be a positive finite number"),
    ({"optimizer": "adam", "adam_eps": float("inf")}, "--adam-eps must be a positive finite number"),
    ({"optimizer": "adamw", "weight_decay": -0.01}, "--weight-decay must be 0 or a positive"),
    ({"beta1": 0.8}, "--beta1 needs --optimizer adam or adamw"),
    ({"weight_decay": 0.1}, "--weight-decay needs --optimizer adam or adamw"),
    ({"optimizer": "adam", "momentum": 0.9}, "--momentum is SGD's"),
]


@pytest.mark.parametrize("fields,needle", BAD, ids=[str(f) for f, _ in BAD])
def test_bad_optimizer_settings_are_refused_before_anything_runs(fields, needle):
    with pytest.raises(UsageError, match=needle.replace("(", r"\(")):
        RunConfig(**fields).check_values()


@pytest.mark.parametrize("args,needle", [
    (["--optimizer", "adam", "--beta2", "1.5"], "--beta2 must be at least 0 and below 1"),
    (["--optimizer", "lion"], "Invalid value for '--optimizer'"),
    (["--weight-decay", "0.1"], "--weight-decay needs --optimizer adam or adamw"),
])
@pytest.mark.parametrize("engine", [["--engine", "sim", "--ranks", "2"], []])
def test_on_the_command_line_a_bad_value_is_one_line_and_exit_2(tmp_path, args, needle, engine):
    out = tmp_path / "o"
    proc = run_cli("run", *engine, "--strategy", "ring", "--steps", "2", *args, "--out", str(out), timeout_s=60)
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("[warn]")]
    assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


def test_adam_and_adamw_keep_state_and_sgd_only_with_momentum():
    assert has_optimizer_state(RunConfig(optimizer="adam")) and has_optimizer_state(RunConfig(optimizer="adamw"))
    assert has_optimizer_state(RunConfig(momentum=0.9)) and not has_optimizer_state(RunConfig())


@pytest.mark.parametrize("strategy,recovery,scenario,refused", [
    ("ring", "shrink", "kill-mid-reduction", None),  # replicated: every survivor holds the whole state
    ("zero-ring", "shrink", "none", None),
    ("zero-ring", "shrink", "kill-mid-reduction", "no replica"),
    ("zero-ring", "respawn", "kill-before-compute", "no replica"),  # the self-test's state-lost-on-respawn
    ("ring", "respawn", "kill-mid-reduction", "it is not handed over"),
    ("rd", "shrink", "partition-heal", "takes the parameters but not the optimizer state"),
    ("ps", "shrink", "none", "ps steps a copy"),
    ("hsdp", "respawn", "kill-in-sharded-step", None),  # the replica hands m, v and t over
    ("hsdp", "shrink", "cascade", "both replicas"),
])
@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_adam_is_refused_exactly_what_momentum_is(strategy, recovery, scenario, refused, optimizer):
    plan = load_schedule(scenario, 3)
    config = RunConfig(strategy=strategy, recovery=recovery, scenario=scenario, optimizer=optimizer)
    reason = refusal(strategy, has_optimizer_state(config), recovery, plan)
    assert reason == refusal(strategy, 0.9, recovery, plan)  # one rule for any optimizer state
    assert (reason is None) == (refused is None) and (refused is None or refused in reason), reason
    if reason:
        assert "--momentum" not in reason.split(";")[0] and "optimizer state" in reason
        with pytest.raises(UsageError):
            check_supported(config, plan)
    else:
        check_supported(config, plan)
    assert refusal(strategy, has_optimizer_state(RunConfig(strategy=strategy)), recovery, plan) is None


def test_a_refused_adam_run_says_why_in_one_line_and_exits_2(tmp_path):
    out = tmp_path / "o"
    proc = run_cli("run", "--engine", "sim", "--ranks", "3", "--strategy", "zero-ring", "--optimizer", "adam",
                   "--scenario", "kill-mid-reduction", "--steps", "4", "--out", str(out))
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "no replica" in lines[0], proc.stderr
    assert not out.exists()


def test_the_optimizer_settings_are_recorded_for_the_checker(tmp_path):
    out = tmp_path / "o"
    proc = run_cli("run", "--engine", "sim", "--ranks", "2", "--strategy", "ring", "--optimizer", "adamw",
                   "--beta1", "0.8", "--beta2", "0.99", "--adam-eps", "1e-06", "--weight-decay", "0.05",
                   "--steps", "3", "--out", str(out))
    assert proc.returncode == 0 and "verdict: pass" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    want = {"optimizer": "adamw", "beta1": 0.8, "beta2": 0.99, "adam_eps": 1e-6, "weight_decay": 0.05, "momentum": 0.0}
    case = json.loads(next((out / "history").glob("*/case.json")).read_text())
    assert {k: case["config"][k] for k in want} == want
    assert "--optimizer adamw" in case["replay"] and "--weight-decay 0.05" in case["replay"]
    run = json.loads((out / "run.json").read_text())
    assert {k: run["config"][k] for k in want} == want, run.get("config")
