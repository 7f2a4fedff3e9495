"""The invariants that judge Adam with the checker's own model (mpibench/check/adam.py;
the model's bound alone: tests/test_optimizer_model.py).

Honest simulated runs are judged pass; the known-bad variants, planted through the public
run-parts hook (``mpibench.selftest.variants:NAME``), each fail the invariant that judges
their mistake at the steps it shows, and the other one holds where their mistake leaves that
part right. Evidence planted in a recorded history, and a case.json that lies about the
settings, are caught too.
"""
from __future__ import annotations

import base64
import csv
import json

import numpy as np
import pytest

from simrun import run_cli


def sim(tmp_path, name, *args, ranks=3):
    out = tmp_path / name
    proc = run_cli("run", "--engine", "sim", "--ranks", str(ranks), "--steps", "6", *args, "--out", str(out))
    return proc, out


def failed(out) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    with open(out / "invariants.csv") as fh:
        for r in csv.DictReader(fh):
            if r["passed"] != "true":
                found.setdefault(r["invariant"], []).append(int(r["step"]))
    return found


@pytest.mark.parametrize("args", [
    ("--strategy", "ring", "--optimizer", "adam", "--scenario", "kill-mid-reduction", "--recovery", "shrink"),
    ("--strategy", "ring", "--optimizer", "adamw", "--weight-decay", "0.1", "--scenario", "kill-mid-reduction"),
    ("--strategy", "zero-ring", "--optimizer", "adam", "--scenario", "short-epochs"),
    ("--strategy", "zero-halving", "--optimizer", "adam", "--weight-decay", "0.01", "--scenario", "none"),
    ("--strategy", "hsdp", "--optimizer", "adam", "--scenario", "kill-in-sharded-step", "--recovery", "respawn"),
    ("--strategy", "native", "--optimizer", "adam", "--beta1", "0", "--beta2", "0", "--scenario", "straggler"),
], ids=lambda a: " ".join(a[1::2][:3]))
def test_honest_adam_runs_pass_every_invariant_on_every_step(tmp_path, args):
    proc, out = sim(tmp_path, "honest", *args)
    assert proc.returncode == 0 and "verdict: pass" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = (out / "invariants.csv").read_text()
    assert rows.count(",optimizer_state,true,") == 6 and rows.count(",equivalence,true,") == 6
    assert "step count t" in rows


# What each known-bad variant gets wrong decides which invariant fails at which steps, and which
# holds: a variant whose state is right but whose update is wrong passes optimizer_state.
VARIANTS = {
    "adam-no-bias-correction": (("--optimizer", "adam"), {"equivalence": [0, 1, 2, 3, 4, 5]}),
    "adam-beta1-for-beta2": (("--optimizer", "adam"),  # v_hat = g^2 at t = 1 whatever the decay
                             {"optimizer_state": [0, 1, 2, 3, 4, 5], "equivalence": [1, 2, 3, 4, 5]}),
    "adam-steps-twice": (("--optimizer", "adam"), {"optimizer_state": [0, 1, 2, 3, 4, 5],
                                                   "equivalence": [1, 2, 3, 4, 5]}),
    "adamw-drops-decay": (("--optimizer", "adamw", "--weight-decay", "0.1"), {"equivalence": [0, 1, 2, 3, 4, 5]}),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_known_bad_adam_fails_the_invariant_that_judges_its_mistake(tmp_path, variant):
    options, want = VARIANTS[variant]
    proc, out = sim(tmp_path, variant, "--strategy", "native", "--scenario", "none", "--samples", "100",
                    "--batch-size", "16", *options, "--run-parts", f"mpibench.selftest.variants:{variant}")
    assert proc.returncode == 1 and "verdict: fail" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert failed(out) == want


@pytest.mark.parametrize("field,value,invariants", [
    ("beta2", 0.99, {"optimizer_state", "equivalence"}),
    ("weight_decay", 0.05, {"equivalence"}),  # adamw's decay leaves m and v as they are
    ("optimizer", "adam", {"optimizer_state", "equivalence"}),  # the decay as L2, in the gradient
    ("adam_eps", 1e-3, {"equivalence"}),
])
def test_the_checker_reads_the_settings_from_the_case_and_bites_when_they_lie(tmp_path, field, value, invariants):
    proc, out = sim(tmp_path, "lie", "--strategy", "ring", "--optimizer", "adamw", "--weight-decay", "0.1",
                    "--scenario", "none")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    path = next((out / "history").glob("*/case.json"))
    info = json.loads(path.read_text())
    info["config"][field] = value
    path.write_text(json.dumps(info))
    check = run_cli("check", str(out))
    assert check.returncode == 1 and "verdict: fail" in check.stdout, check.stdout[-2000:]
    assert set(failed(out)) == invariants


@pytest.mark.parametrize("plant,needle", [("t", "step count t of [0, 676) is 3, reference 2"),
                                          ("m", "worker 1: m element"), ("v", "worker 1: v element"),
                                          ("fields", "records 2 fields")])
def test_planted_adam_evidence_is_caught_by_optimizer_state(tmp_path, plant, needle):
    proc, out = sim(tmp_path, "plant", "--strategy", "ring", "--optimizer", "adam", "--scenario", "none")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    path = sorted(next((out / "history").iterdir()).glob("worker-1.jsonl"))[0]
    records = [json.loads(line) for line in path.read_text().splitlines()]
    attempt = next(r for r in records if r.get("kind") == "attempt" and r["step"] == 1)
    (o, n, m, v, t), = attempt["optimizer"]
    doubled = base64.b64encode((np.frombuffer(base64.b64decode(m if plant == "m" else v), "<f4") * 2)
                               .astype("<f4").tobytes()).decode()
    attempt["optimizer"] = {"t": [[o, n, m, v, t + 1]], "m": [[o, n, doubled, v, t]], "v": [[o, n, m, doubled, t]],
                            "fields": [[o, n, m, t]]}[plant]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    check = run_cli("check", str(out))
    assert check.returncode == 1 and "optimizer_state" in check.stdout, check.stdout[-2000:]
    rows = (out / "invariants.csv").read_text()
    assert needle in rows, [line for line in rows.splitlines() if ",false," in line]
