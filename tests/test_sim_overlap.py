"""A real model's overlapped step on the round model (mpibench.sim.overlap) and `predict --profile`.

The model is held to what must be true of any overlap, whatever the figures: overlap never
costs more than no overlap, never hides more than the backward pass lasts, never hides the last
bucket's sync (it is ready only when the backward pass ends), and with no buckets exposes it all."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from mpibench.profiles import profile
from mpibench.profiles.buckets import ddp_buckets
from mpibench.sim.overlap import backward_ready_s, predict_step
from mpibench.sim.platform import CLUSTER_100G
from mpibench.sim.rounds import sync_s


@pytest.mark.parametrize("name", ["resnet50", "gpt2", "llama7b-tp8"])
@pytest.mark.parametrize("ranks", [1, 2, 8, 512])
@pytest.mark.parametrize("strategy", ["ring", "rd", "hier"])
@pytest.mark.parametrize("flops_per_s", [1e11, 1e14])
def test_overlap_hides_at_most_what_the_backward_pass_lasts(name, ranks, strategy, flops_per_s):
    model = profile(name)
    kw = dict(local_batch=8, flops_per_s=flops_per_s)
    ddp = predict_step(CLUSTER_100G, model, strategy, ranks, "ddp", **kw)
    none = predict_step(CLUSTER_100G, model, strategy, ranks, "none", **kw)
    backward_s = max(backward_ready_s(model, 8, flops_per_s))
    assert none.exposed_s == pytest.approx(none.sync_s)  # nothing to overlap with
    assert ddp.step_s == pytest.approx(ddp.compute_s + ddp.exposed_s)
    assert 0.0 <= ddp.exposed_s <= ddp.sync_s + 1e-15
    assert ddp.sync_s - ddp.exposed_s <= backward_s * (1 + 1e-12)  # hidden only behind compute
    last = ddp_buckets(model.tensors)[-1]  # holds the first layer: complete when the backward ends
    # (to the rounding of a clock that has run the whole backward pass)
    assert ddp.exposed_s >= sync_s(CLUSTER_100G, strategy, ranks, last.nbytes) - 1e-12 * backward_s
    if ranks == 1:
        assert ddp.exposed_s == 0.0 and ddp.efficiency == 1.0
    assert 0.0 < ddp.efficiency <= 1.0


def test_gradients_are_ready_in_reverse_registration_order():
    model = profile("bert-large")
    ready = backward_ready_s(model, 4, 1e12)
    assert all(a >= b for a, b in zip(ready, ready[1:]))
    assert max(ready) == pytest.approx(model.backward_flops_per_sample() * 4 / 1e12)


def predict(*args, cwd):
    return subprocess.run([sys.executable, "-m", "mpibench", "predict", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_predict_profile_prints_and_writes_tagged_rows_and_refuses_bad_input(tmp_path):
    done = predict("--profile", "resnet50", "--strategies", "ring,auto", "--ranks", "8,4096", "--flops-per-s",
                   "5e13", "--out", "p.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[simulated]" in done.stdout and "exposed_s" in done.stdout
    with open(tmp_path / "p.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 and {r["figure"] for r in rows} == {"simulated"}
    assert {(r["strategy"], r["ranks"]) for r in rows} == {("ring", "8"), ("ring", "4096"), ("auto", "8"),
                                                          ("auto", "4096")}
    before = (tmp_path / "p.csv").read_text()
    for args, words in [(["--profile", "resnet51"], "unknown profile"),
                        (["--profile", "gpt2", "--out", "p.csv"], "already exists"),
                        (["--profile", "gpt2", "--local-batch", "0"], "--local-batch"),
                        (["--profile", "gpt2", "--sizes", "1M"], "--sizes")]:
        bad = predict(*args, cwd=tmp_path)
        assert bad.returncode == 2 and words in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
    assert (tmp_path / "p.csv").read_text() == before  # nothing written is lost


def test_horovods_fusion_of_another_release_is_a_parameter():
    """A threshold of 0 reduces every tensor alone; a longer cycle fuses more per buffer."""
    model = profile("resnet50")
    alone = predict_step(CLUSTER_100G, model, "ring", 64, "horovod", 8, 1e13, fusion=(0, 1e-3))
    assert alone.buckets == len(model.tensors)
    default = predict_step(CLUSTER_100G, model, "ring", 64, "horovod", 8, 1e13)
    slower = predict_step(CLUSTER_100G, model, "ring", 64, "horovod", 8, 1e13, fusion=(64 << 20, 5e-3))
    assert slower.buckets < default.buckets and slower.sync_s < default.sync_s  # fewer latencies, same bytes
