"""A step split part by part from every rank's records (job/stepparts.py) and its modelled twin."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpibench.engine.steprecord import PART_NAMES
from mpibench.job.stepparts import PART_COLUMNS, one_rank_parts, split
from mpibench.results import costmodel
from mpibench.results.calibration import Calibration
from mpibench.results.compare import parts_text


def _rows(compute, sync, commit, evidence=0.0, check=0.0):
    return [dict(zip(PART_NAMES, (compute, sync, commit, evidence, check)))[n] for n in PART_NAMES]


def test_the_last_rank_to_arrive_gives_the_reduction_and_the_others_wait():
    # rank 0 computes 3 ms longer, so rank 1 waits 3 ms in the sync: reduction 1 ms, wait 3 ms
    rank0 = [_rows(5e-3, 1e-3, 0.2e-3, evidence=0.5e-3)] * 4
    rank1 = [_rows(2e-3, 4e-3, 0.2e-3, evidence=0.5e-3)] * 4
    parts = split([rank0, rank1], warmup=1)
    assert set(parts) == set(PART_COLUMNS)
    assert parts["reduction_s"] == pytest.approx(1e-3) and parts["wait_s"] == pytest.approx(3e-3)
    assert parts["commit_s"] == pytest.approx(0.2e-3) and parts["compute_s"] == pytest.approx(5e-3)
    assert parts["skew_s"] == pytest.approx(3e-3)  # what the measured parts predict for the wait


@settings(max_examples=50, deadline=None)
@given(ranks=st.integers(1, 5), steps=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_parts_are_never_negative_and_one_rank_never_waits(ranks, steps, seed):
    rng = np.random.default_rng(seed)
    tables = [rng.uniform(0, 1e-2, (steps, len(PART_NAMES))).tolist() for _ in range(ranks)]
    parts = split(tables, warmup=2)
    assert all(v >= 0 for v in parts.values())
    if ranks == 1:
        assert parts["wait_s"] == 0 and parts["skew_s"] == 0


def test_no_steps_no_parts():
    assert split([[], []], warmup=2) == {} and split([], warmup=0) == {}


def _cal(**kw):
    base = dict(alpha_s=1e-6, beta_s_per_byte=1e-10, gamma_cache_s_per_byte=1e-10, gamma_memory_s_per_byte=2e-10,
                compute_fixed_s=0.0, compute_per_sample_s=0.0, cores=2, ranks_on_host=2, ranks=2,
                agree_s=20e-6, agree_self_s=2e-6)
    return Calibration(**{**base, **kw})


@pytest.mark.parametrize("p, expected", [(1, 2e-6), (2, 20e-6), (4, 40e-6), (5, 60e-6)])
def test_the_agreement_is_a_collective_of_its_own(p, expected):
    assert costmodel.agreement_s(_cal(), p) == pytest.approx(expected)


def test_modelled_parts_take_the_beside_figures_and_the_beside_wait():
    beside = {"compute_s": 1e-3, "evidence_s": 2e-4, "check_s": 1e-5, "wait_s": 3e-4}
    parts = costmodel.step_parts(_cal(), "ring", 2, 4096, beside)
    assert list(parts) == list(costmodel.STEP_PARTS)
    assert parts["compute_s"] == 1e-3 and parts["wait_s"] == 3e-4 and parts["commit_s"] == 20e-6
    assert parts["reduction_s"] == pytest.approx(costmodel.sync_s(_cal(), "ring", 2, 4096))
    assert costmodel.step_parts(_cal(), "ring", 1, 4096, beside)["wait_s"] == 0
    for unknown in (None, float("nan")):  # no beside figure: the ranks are taken to arrive at once
        assert costmodel.step_parts(_cal(), "ring", 2, 4096, {**beside, "wait_s": unknown})["wait_s"] == 0
    assert costmodel.step_parts(_cal(), "ring", 2, 4096, beside, agrees=False)["commit_s"] == 0
    # the sync's local work (pack, apply) comes from the one-rank loop's sync less its collective
    cal = _cal(call_overhead_s=2e-6)
    local = costmodel.step_parts(cal, "ring", 2, 4096, {**beside, "reduction_s": 12e-6})
    assert local["reduction_s"] == pytest.approx(10e-6 + costmodel.sync_s(cal, "ring", 2, 4096))
    assert costmodel.step_parts(cal, "ring", 1, 4096, {**beside, "reduction_s": 12e-6})["reduction_s"] == \
        pytest.approx(12e-6)  # p = 1: the one-rank loop's own sync


@pytest.mark.parametrize("p", [2, 4])
@pytest.mark.parametrize("wait", [0.0, 1e-4, 1e-3])
def test_the_modelled_step_holds_the_wait_it_is_given_above_one_rank(p, wait):
    cal = _cal(one_rank_step_s={"32": 2e-3})
    assert costmodel.step_s(cal, "ring", p, 32, 4096, wait_s=wait) == \
        pytest.approx(costmodel.step_s(cal, "ring", p, 32, 4096) + wait)
    assert costmodel.step_s(cal, "ring", 1, 32, 4096, wait_s=wait) == costmodel.step_s(cal, "ring", 1, 32, 4096)


def _loop_rows(busy_per_step):
    """One-rank loop rows (PART_NAMES order) whose compute is ``busy_per_step`` and the rest small."""
    return [[b, 1e-5, 0.0, 0.0, 0.0] for b in busy_per_step]


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_the_beside_wait_is_the_spread_of_the_loops_run_at_once(ranks):
    tables = [_loop_rows([1e-3 + 1e-4 * r] * 6) for r in range(ranks)]  # rank r a tenth of a ms slower per step
    parts = one_rank_parts(tables, 0)
    assert parts["compute_s"] == pytest.approx(1e-3)  # the first rank's
    assert parts["wait_s"] == pytest.approx(1e-4 * (ranks - 1))
    assert one_rank_parts([], 0) == {} and one_rank_parts([[]], 0) == {}


def test_the_beside_wait_is_taken_step_by_step_not_from_the_medians():
    # The same times in another order: per step the two loops are 0.4 ms apart though their medians agree.
    first, second = [1.0e-3, 1.4e-3] * 4, [1.4e-3, 1.0e-3] * 4
    assert one_rank_parts([_loop_rows(first), _loop_rows(second)], 0)["wait_s"] == pytest.approx(0.4e-3)


def test_each_parts_error_is_shown():
    text = parts_text({"compute_s": 1e-3, "reduction_s": 2e-4, "wait_s": 0.0},
                      {"compute_s": 1.1e-3, "reduction_s": 1e-4, "wait_s": 0.0})
    assert text == "compute 1/1.1 ms (+10%); reduction 0.2/0.1 ms (-50%)"


@pytest.mark.mpi
@pytest.mark.parametrize("scenario, agrees", [("none", False), ("straggler", True)])
def test_steps_csv_carries_every_part(tmp_path, scenario, agrees):
    from mpirun import run_mpi

    job = run_mpi(2, ["run", "--strategy", "ring", "--scenario", scenario, "--steps", "4"], out=tmp_path, timeout=180)
    assert job.returncode == 0, job.text[-3000:]
    steps = job.csv("steps.csv")
    for part in ("compute_s", "sync_time_s", "commit_s", "evidence_s", "check_time_s"):
        assert (steps[part].astype(float) >= 0).all(), part
    assert (steps.compute_s.astype(float) > 0).all() and (steps.evidence_s.astype(float) > 0).all()
    parts = steps.compute_s + steps.sync_time_s
    assert (parts <= steps.step_time_s.astype(float) + 1e-9).all()  # both inside the step timer
    # an agreement over two processes takes microseconds at least; none is a function call
    assert (steps.commit_s.astype(float) > 2e-6).all() == agrees


def test_the_page_shows_each_points_stack_measured_beside_modelled():
    import pandas as pd

    from mpibench.results.page.stepstack import stack_section

    base = {"strategy": "ring", "mode": "strong", "ranks": 2}
    parts = dict(compute_s=1e-3, reduction_s=2e-4, commit_s=0.0, evidence_s=3e-4, check_s=2e-5, wait_s=4e-4)
    model = {**parts, "reduction_s": 1e-4, "wait_s": 2e-4}
    html = stack_section(pd.DataFrame([{**base, **parts, "tag": "measured"}, {**base, **model, "tag": "modelled"}]))
    assert html.count("<tr>") == 2 and "0.2 / 0.1 (-50%)" in html and "0.4 / 0.2 (-50%)" in html
    assert "background:#4e79a7" in html  # compute drawn in both bars
    assert "No step parts" in stack_section(pd.DataFrame([{**base, "tag": "measured", "step_time_s": 1.0}]))


def test_a_part_that_misses_by_much_of_the_step_is_named():
    from mpibench.results.compare import part_misses

    measured = {"compute_s": 1e-3, "reduction_s": 1e-4, "wait_s": 5e-4}
    modelled = {"compute_s": 1.02e-3, "reduction_s": 0.5e-4, "wait_s": 1e-4}
    found = part_misses(measured, modelled, step_s=2e-3, tolerance=0.25)
    assert [code for code, _ in found] == ["part_wait"]  # reduction is off by half, but 2.5% of the step
    assert "0.5 ms measured against 0.1 ms modelled (20% of the step)" in found[0][1]
