"""Published data-parallel scaling beside predict's efficiency (lab/studies/published_scaling.py).

The result files are what the study writes today; every anchor names its source at a commit,
quotes the figure it comes from, sits on a platform file that exists, keeps the published
figure (measured) apart from the prediction (simulated), and every ratio outside the stated
factor says why. The prediction is the one ``predict --profile`` prints for the same inputs.
"""
from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "lab" / "data"
FACTOR = 1.25


def rows_of(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_the_result_files_are_what_the_study_regenerates(tmp_path):
    out = tmp_path / "published_scaling.csv"
    done = subprocess.run([sys.executable, str(ROOT / "lab" / "studies" / "published_scaling.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text() == (DATA / "published_scaling.csv").read_text()
    summary = "published_scaling_summary.csv"
    assert (tmp_path / summary).read_text() == (DATA / summary).read_text()


def published_from_quote(r: dict) -> float:
    """The efficiency recomputed from the quoted cells or sentence alone."""
    q = r["quote"]
    if m := re.search(r"p50: ([\d.]+)s.*p50: ([\d.]+)s", q):  # seconds per iteration, 1 GPU then N
        return float(m[1]) / float(m[2])
    if m := re.match(r"1 GPU: ([\d.]+)[^;]*; 8 GPUs: ([\d.]+)", q):  # throughput at 1 and 8 GPUs
        return float(m[2]) / (8 * float(m[1]))
    if m := re.match(r"1 node: (\d+); (\d+) nodes: (\d+)", q):  # throughput at 1 and N nodes
        return float(m[3]) / (int(m[2]) * float(m[1]))
    which = "VGG-16" if r["model"] == "vgg16" else "both Inception V3 and ResNet-101"
    return int(re.search(rf"(\d+)% scaling efficiency for {which}", q)[1]) / 100


def test_every_anchor_names_its_source_quotes_its_figure_and_explains_a_miss():
    rows = rows_of(DATA / "published_scaling.csv")
    assert len(rows) >= 20 and max(int(r["gpus"]) for r in rows) >= 256
    for r in rows:
        assert re.match(r"https://github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/", r["url"]), r["url"]
        assert r["source"] and r["where"] and r["measures"] and r["interconnect"] and r["batch_from"], r
        assert abs(published_from_quote(r) - float(r["published_efficiency"])) < 1e-3, r  # the quoted figures
        assert r["compute_from"], r  # the device rate and where it comes from
        assert (ROOT / "platforms" / r["platform"]).exists()
        assert (r["tag_published"], r["tag_predicted"]) == ("measured", "simulated")
        published, predicted = float(r["published_efficiency"]), float(r["predicted_efficiency"])
        assert 0 < published <= 1.1 and 0 < predicted <= 1.0 + 1e-9
        ratio = predicted / published
        assert abs(ratio - float(r["ratio"])) <= 1e-3 * ratio
        within = 1 / FACTOR <= float(r["ratio"]) <= FACTOR
        assert (r["within_1.25x"] == "True") == within
        if not within:
            assert r["cause"].strip(), r  # every ratio beyond the factor says why
    summary = rows_of(DATA / "published_scaling_summary.csv")
    assert [s["anchor"] for s in summary] == list(dict.fromkeys(r["anchor"] for r in rows))


def test_a_row_is_what_predict_profile_prints_for_the_same_inputs():
    """The study calls predict's own step model: the 16-GPU ResNet-50 row, through the command line."""
    (row,) = [r for r in rows_of(DATA / "published_scaling.csv")
              if r["anchor"] == "pytorch-ddp-benchmark" and r["model"] == "resnet50" and r["gpus"] == "16"]
    done = subprocess.run([sys.executable, "-m", "mpibench", "predict", "--profile", "resnet50", "--platform",
                           str(ROOT / "platforms" / row["platform"]), "--ranks", "16", "--strategies", row["strategy"],
                           "--bucket-policy", row["policy"], "--local-batch", row["per_gpu_batch"],
                           "--flops-per-s", row["flops_per_s"]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if ln.split()[:2] == [row["strategy"], "16"]]
    assert abs(float(line.split()[-1]) - float(row["predicted_efficiency"])) <= 6e-4  # printed to 3 places


def test_the_anchors_carry_their_calibration_and_their_sources_own_figures():
    sys.path.insert(0, str(ROOT / "lab" / "studies"))
    import published_scaling as study

    from mpibench.sim.overlap import predict_step
    from mpibench.sim.platform import load_platform

    # the predicted compute is the source's one-GPU step: PyTorch's 0.097 s for 32 ResNet-50 images
    a = next(x for x in study.DDP_ANCHORS if x.model == "resnet50")
    plat = load_platform(str(ROOT / "platforms" / a.source.platform))
    one = predict_step(plat, study.model_profile(a.model, a.dtype), "ring", 1, "ddp", 32, a.flops_per_s)
    assert abs(one.compute_s - 0.097) < 1e-9 and one.efficiency == 1.0
    # FP16 BERT runs all-reduce fp16 gradients (model.half()), TF32 ones fp32
    for x in study.BERT_8_ANCHORS + study.BERT_NODE_ANCHORS:
        assert x.dtype == ("float16" if "Mixed Precision" in x.quote or "mixed precision" in x.quote else "float32")
    # Horovod's runs fused as its code of the time did: 64 MiB every 5 ms
    assert {x.source.fusion for x in study.HVD_ANCHORS} == {(64 << 20, 5e-3)}
