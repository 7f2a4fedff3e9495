"""The results layer inside a real job: calibration, scaling on sub-communicators, comparison."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from mpibench.base.records import BENCH_COLUMNS

from mpirun import mpirun_command, run_command

pytestmark = pytest.mark.mpi
DRIVER = Path(__file__).with_name("results_driver.py")
WORLD = 3  # p = 1, 2, 3: one point beyond this machine's two cores


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("results") / "run"
    out.mkdir()
    measured = [{"strategy": s, "ranks": WORLD, "bytes": 4096, "iterations": 10, "time_min_s": 1e-4,
                 "time_avg_s": 1.5e-4, "time_max_s": 2e-4, "algbw_gbps": 0.03, "busbw_gbps": 0.04,
                 "errors": 0, "tag": "measured"} for s in ("native", "ring", "ps")]
    pd.DataFrame(measured, columns=BENCH_COLUMNS).to_csv(out / "bench.csv", index=False)
    cmd = mpirun_command() + ["-n", str(WORLD), sys.executable, str(DRIVER), str(out)]
    job = run_command(cmd, timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    return out


def test_calibration_is_stored_with_how_each_figure_was_measured(run):
    cal = json.loads((run / "run.json").read_text())["calibration"]
    assert cal["alpha_s"] > 0 and cal["beta_s_per_byte"] >= 0 and cal["alpha_step_s"] > 0
    assert cal["compute_per_sample_s"] > 0 and cal["gamma_memory_s_per_byte"] > 0
    assert cal["ranks_on_host"] == WORLD and cal["cores"] >= 1
    for figure in ("alpha_s", "beta_s_per_byte", "gamma_cache_s_per_byte", "compute_fixed_s",
                   "compute_per_sample_s", "call_overhead_s", "alpha_step_s", "cores", "ranks_on_host",
                   "step_bands", "step_band_split_bytes"):
        assert cal["how"][figure], figure



def test_every_modelled_step_above_one_rank_waits_as_long_as_the_loops_beside_it_predict(run):
    scaling = pd.read_csv(run / "scaling.csv")
    key = ["strategy", "mode", "ranks", "local_batch"]
    measured = scaling[scaling.tag == "measured"].set_index(key)
    modelled = scaling[scaling.tag == "modelled"].set_index(key)
    for point, row in modelled.iterrows():
        beside = measured.loc[point, "one_rank_wait_s"]
        assert beside >= 0
        assert row.wait_s == (pytest.approx(beside) if point[2] > 1 else 0.0), point


def test_a_steps_messages_are_calibrated_as_exchanges_after_a_local_step(run):
    """Every exchange size has its time; the step's one line and bands are fitted to them."""
    from mpibench.job.exchange import EXCHANGE_SIZES_BYTES
    from mpibench.job.timing import fit_alpha_beta

    cal = json.loads((run / "run.json").read_text())["calibration"]
    points = [tuple(p) for p in cal["exchange_step"]]
    assert [n for n, _ in points] == list(EXCHANGE_SIZES_BYTES) and all(t > 0 for _, t in points)
    assert (cal["alpha_step_s"], cal["beta_step_s_per_byte"]) == pytest.approx(fit_alpha_beta(points))
    assert cal["step_bands"] and cal["step_bands"][-1][0] is None
    assert (cal["step_band_split_bytes"] is None) == (len(cal["step_bands"]) == 1)


def test_scaling_measures_every_point_and_models_it(run):
    scaling = pd.read_csv(run / "scaling.csv")
    measured, modelled = scaling[scaling.tag == "measured"], scaling[scaling.tag == "modelled"]
    points = {(s, m, p) for s in ("native", "ps", "ring") for m in ("strong", "weak") for p in (1, 2, 3)}
    assert set(zip(measured.strategy, measured["mode"], measured.ranks)) == points
    assert set(zip(modelled.strategy, modelled["mode"], modelled.ranks)) == points
    assert (measured.violations == 0).all() and (measured.step_time_s > 0).all()
    assert (modelled.assumptions.str.contains("one core per rank")).all()
    strong = measured[measured["mode"] == "strong"]
    assert set(strong.global_batch) == {48}  # 48 over 1, 2 and 3 ranks
    assert measured[measured.ranks == 1].speedup.eq(1.0).all()


def test_scaling_carries_the_step_part_by_part_measured_and_modelled(run):
    from mpibench.results.costmodel import STEP_PARTS

    scaling = pd.read_csv(run / "scaling.csv")
    measured, modelled = scaling[scaling.tag == "measured"], scaling[scaling.tag == "modelled"]
    for part in STEP_PARTS:
        assert (measured[part] >= 0).all() and measured[part].notna().all(), part
        assert modelled[part].notna().all(), part
    assert (measured.compute_s > 0).all() and (measured.reduction_s > 0).all()
    assert (modelled.commit_s == 0).all()  # the fault-free scenario commits without an agreement
    assert (measured.reduction_s <= measured.sync_time_s * 1.5 + 1e-9).all()  # a median of per-step minima
    assert (modelled[modelled.ranks == 1].wait_s == 0).all() and (measured.one_rank_compute_s > 0).all()
    assert (measured.one_rank_reduction_s > 0).all() and (modelled.reduction_s > 0).all()
    cal = json.loads((run / "run.json").read_text())["calibration"]
    assert cal["agree_s"] > 0 and cal["agree_self_s"] > 0 and cal["how"]["agree_s"]
    comparison = pd.read_csv(run / "comparison.csv", keep_default_na=False)
    steps = comparison[comparison.kind == "step"]
    assert steps.parts.str.contains("reduction").all() and steps.parts.str.contains("compute").all()


def test_comparison_flags_every_disagreement_with_a_cause(run):
    comparison = pd.read_csv(run / "comparison.csv", keep_default_na=False)
    assert (comparison.kind == "step").sum() == 18 and (comparison.kind == "collective").sum() == 3
    cal = json.loads((run / "run.json").read_text())["calibration"]
    for row in comparison.to_dict("records"):
        assert (row["flag"] == "") == (str(row["within"]) == "True")
        if row["flag"] == "slower than modelled":
            assert row["cause"]
            if row["ranks"] > cal["cores"]:
                assert "oversubscribed" in row["cause_codes"].split()


def test_bench_gets_a_modelled_row_per_measured_row_and_the_report_is_written(run):
    bench = pd.read_csv(run / "bench.csv")
    assert sorted(bench[bench.tag == "modelled"].strategy) == ["native", "ps", "ring"]
    page = (run / "report.html").read_text()
    assert page.count("<h2") == 5 and "Measured against modelled" in page and "id=\"verdict\"" in page
