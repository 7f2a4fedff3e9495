"""The cost model, the calibration fits and the comparison flags, without MPI."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.results import compare, costmodel
from mpibench.job.timing import fit_alpha_beta, fit_line
from mpibench.results.calibration import Calibration
from mpibench.sync.ps import ps_cost_s
from mpibench.sync.ring import ring_cost_s
from mpibench.job.scaling import add_speedups, rank_counts

from test_results_report import calibration

seconds = st.floats(1e-9, 1e-3, allow_nan=False)
per_byte = st.floats(0, 1e-8, allow_nan=False)
ranks = st.integers(1, 64)
sizes = st.integers(4, 1 << 26)


@settings(max_examples=60, deadline=None)
@given(alpha=seconds, beta=per_byte, gamma=per_byte, p=ranks, n=sizes)
def test_ring_is_the_textbook_formula(alpha, beta, gamma, p, n):
    cal = calibration(alpha_s=alpha, beta_s_per_byte=beta, gamma_cache_s_per_byte=gamma,
                      gamma_memory_s_per_byte=gamma)
    expected = (2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma
                if p > 1 else cal.call_overhead_s)
    assert ring_cost_s(cal, p, n) == pytest.approx(expected, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(alpha=seconds, beta=per_byte, gamma=per_byte, p=st.integers(2, 64), n=sizes)
def test_ps_with_one_shard_per_rank_costs_what_the_ring_costs(alpha, beta, gamma, p, n):
    cal = calibration(alpha_s=alpha, beta_s_per_byte=beta, gamma_cache_s_per_byte=gamma,
                      gamma_memory_s_per_byte=gamma)
    assert ps_cost_s(cal, p, n, p) == pytest.approx(ring_cost_s(cal, p, n), rel=1e-9)
    # a single server carries every byte p-1 times: never cheaper than k shards
    assert ps_cost_s(cal, p, n, 1) >= ps_cost_s(cal, p, n, p) * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(p=ranks, n=sizes, strategy=st.sampled_from(["ring", "ps", "native"]))
def test_latency_share_is_a_fraction_and_one_without_bandwidth_terms(p, n, strategy):
    cal = calibration()
    assert 0.0 <= costmodel.latency_share(cal, strategy, p, n) <= 1.0
    pure_latency = calibration(beta_s_per_byte=0.0, gamma_cache_s_per_byte=0.0, gamma_memory_s_per_byte=0.0)
    if p > 1:
        assert costmodel.latency_share(pure_latency, strategy, p, n) == pytest.approx(1.0)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_busbw_follows_nccl_tests(p):
    algbw, busbw = costmodel.bandwidths_gbps("ring", p, 1e9, 2.0)
    assert algbw == 0.5 and busbw == pytest.approx(0.5 * 2 * (p - 1) / p)


def test_one_rank_has_no_modelled_bandwidth():
    assert costmodel.bandwidths_gbps("ring", 1, 64 << 20, 4.7e-6) == (None, None)


def test_step_uses_the_after_compute_alpha_and_adds_compute():
    cal = calibration()
    step = costmodel.step_s(cal, "ring", 4, 128, 76844)
    in_step = cal.in_step()
    assert in_step.alpha_s == cal.alpha_step_s
    loss_stats_and_evidence_gather = 2 * (2 * cal.alpha_step_s)  # log2(4) latencies each
    expected = (cal.compute_s(128) + cal.loop_overhead_s + ring_cost_s(in_step, 4, 76844)
                + loss_stats_and_evidence_gather)
    assert step == pytest.approx(expected)


@pytest.mark.parametrize("mode", ["strong", "weak"])
def test_speedup_is_one_at_one_rank_and_grows_while_compute_dominates(mode):
    cal = calibration(alpha_step_s=1e-9, beta_step_s_per_byte=1e-14)
    assert costmodel.speedup(cal, "ring", 1, 4096, mode, 1024) == pytest.approx(1.0)
    assert costmodel.speedup(cal, "ring", 4, 4096, mode, 1024) > 3.0


def test_unknown_strategy_has_no_model():
    with pytest.raises(ValueError):
        costmodel.sync_s(calibration(), "gossip", 4, 1024)


def test_assumptions_are_data_and_name_the_core_assumption():
    assert any("one core per rank" in a for a in costmodel.ASSUMPTIONS)
    assert costmodel.assumptions_text().count(";") == len(costmodel.ASSUMPTIONS) - 1


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0, 1e-3), b=st.floats(0, 1e-6), xs=st.lists(st.integers(1, 1 << 22), min_size=2,
                                                                  max_size=6, unique=True))
def test_fit_line_recovers_a_line(a, b, xs):
    fa, fb = fit_line(xs, [a + b * x for x in xs])
    assert fa == pytest.approx(a, abs=1e-9) and fb == pytest.approx(b, rel=1e-6, abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(a=st.floats(1e-7, 1e-3), b=st.floats(0, 1e-8), xs=st.lists(st.integers(1, 1 << 22), min_size=2,
                                                                     max_size=6, unique=True))
def test_hockney_fit_recovers_latency_and_inverse_bandwidth(a, b, xs):
    alpha, beta = fit_alpha_beta([(x, a + b * x) for x in xs])
    assert alpha == pytest.approx(a, rel=1e-6, abs=1e-9 * b * max(xs))  # float cancellation
    assert beta == pytest.approx(b, rel=1e-6, abs=1e-15)


def test_hockney_fit_never_gives_a_negative_slope():
    assert fit_alpha_beta([(8, 5e-6), (1 << 20, 1e-6)]) == (5e-6, 0.0)


def test_calibration_round_trips_through_a_dict():
    cal = calibration()
    assert Calibration.from_dict({**cal.as_dict(), "unknown_future_field": 1}) == cal


@pytest.mark.parametrize("world, expected", [(1, [1]), (2, [1, 2]), (6, [1, 2, 4, 6]), (8, [1, 2, 4, 8])])
def test_rank_counts_double_up_to_the_world(world, expected):
    assert rank_counts(world) == expected


def test_speedups_strong_and_weak():
    rows = [{"strategy": "ring", "mode": m, "tag": "measured", "ranks": p, "step_time_s": t}
            for m, pts in (("strong", [(1, 4.0), (2, 2.0)]), ("weak", [(1, 1.0), (4, 2.0)])) for p, t in pts]
    out = {(r["mode"], r["ranks"]): (r["speedup"], r["efficiency"]) for r in add_speedups(rows)}
    assert out[("strong", 2)] == (2.0, 1.0) and out[("weak", 4)] == (2.0, 0.5)


# ----------------------------------------------------------------------------- flags
def judge(measured, modelled, ranks=2, nbytes=76844, spread=1.1, other=0.0, **cal_over):
    return compare.judge(calibration(**cal_over), "ring", ranks, nbytes, measured, modelled, spread, {}, other)


def test_within_tolerance_is_not_flagged():
    row = judge(1.2e-3, 1.0e-3)
    assert row["within"] and row["flag"] == "" and row["cause"] == ""
    assert row["ratio"] == pytest.approx(1.2) and row["error"] == pytest.approx(-1 / 6)


@pytest.mark.parametrize("kwargs, code", [
    ({"ranks": 8}, "oversubscribed"),
    ({"other": 1.5}, "host_busy"),
    ({"spread": 3.0}, "straggler"),
    ({"nbytes": 64, "beta_s_per_byte": 0.0}, "latency_bound"),
    ({"nbytes": 16 << 20, "alpha_s": 0.0}, "memory_bandwidth"),
    ({"alpha_s": 0.0, "nbytes": 1 << 20}, "unexplained"),
])
def test_slower_than_modelled_names_the_cause_the_data_shows(kwargs, code):
    row = judge(3e-3, 1e-3, **kwargs)
    assert not row["within"] and row["flag"] == "slower than modelled"
    assert code in row["cause_codes"].split(), row


def test_oversubscription_cause_names_ranks_and_cores():
    row = judge(3e-3, 1e-3, ranks=8, ranks_on_host=8, cores=2)
    assert "8 ranks time-share 2 cores" in row["cause"]


def test_faster_than_modelled_is_flagged_too():
    row = judge(0.5e-3, 1e-3)
    assert row["flag"] == "faster than modelled" and row["cause_codes"] == "faster"


def test_modelled_bench_rows_cover_each_measured_point_once():
    bench = pd.DataFrame([
        {"strategy": "ring", "ranks": 4, "bytes": 4096, "time_min_s": 1e-4, "time_avg_s": 2e-4,
         "time_max_s": 3e-4, "tag": "measured"},
        {"strategy": "ring", "ranks": 4, "bytes": 4096, "time_min_s": 1e-4, "time_avg_s": 2e-4,
         "time_max_s": 3e-4, "tag": "measured"},
        {"strategy": "gossip", "ranks": 4, "bytes": 4096, "time_min_s": 1e-4, "time_avg_s": 2e-4,
         "time_max_s": 3e-4, "tag": "measured"}])
    rows = compare.modelled_bench_rows(calibration(), bench, {})
    assert len(rows) == 1 and rows[0]["tag"] == "modelled"
    assert rows[0]["time_avg_s"] == pytest.approx(ring_cost_s(calibration(), 4, 4096))
    assert not math.isnan(rows[0]["busbw_gbps"])
    with_model = pd.concat([bench, pd.DataFrame(rows)])
    assert compare.modelled_bench_rows(calibration(), with_model, {}) == []
    compared = compare.compare_collectives(calibration(), with_model, {})
    assert [r["kind"] for r in compared] == ["collective", "collective"]
    assert compared[0]["measured_s"] == 3e-4 and "straggler" in compared[0]["cause_codes"]  # max/min = 3


def test_host_load_is_measured_not_guessed():
    import time

    from mpi4py import MPI

    from mpibench.job.hostload import HostLoad, host_busy_s

    before = host_busy_s()
    assert before is not None and before > 0  # Linux /proc/stat
    load = HostLoad(MPI.COMM_SELF)
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:  # this process's own work is not "other" load
        pass
    other = load.other_cores()
    assert other is not None and 0.0 <= other <= 64


@pytest.mark.parametrize("strategy", ["ring", "ps", "native"])
def test_one_rank_step_is_reproduced_at_p1_and_used_at_every_p(strategy):
    cal = calibration(one_rank_step_s={"128": 5e-4})
    assert costmodel.step_s(cal, strategy, 1, 128, 76844) == pytest.approx(5e-4)
    local = 5e-4 - 2 * cal.call_overhead_s
    sync = costmodel.sync_s(cal.in_step(), strategy, 4, 76844)
    loss_stats = evidence_gather = 2 * cal.alpha_step_s  # log2(4) latencies each
    assert costmodel.step_s(cal, strategy, 4, 128, 76844) == pytest.approx(local + sync + loss_stats
                                                                           + evidence_gather)
    # a batch it was not measured at falls back to the compute line plus the loop overhead
    assert costmodel.step_s(cal, strategy, 1, 64, 76844) == pytest.approx(
        cal.compute_s(64) + cal.loop_overhead_s + 2 * cal.call_overhead_s)


def test_a_step_miss_names_the_part_that_missed():
    from mpibench.results.compare import step_parts

    # local work 50 % slower than calibrated, sync as modelled
    parts = step_parts(measured_step=1.5e-3 + 0.2e-3, measured_sync=0.2e-3, modelled_step=1.2e-3,
                       modelled_sync=0.2e-3)
    assert [code for code, _ in parts] == ["local_work"] and "+50%" in parts[0][1]
    # local work as calibrated, sync 3x the model
    parts = step_parts(measured_step=1.6e-3, measured_sync=0.6e-3, modelled_step=1.2e-3, modelled_sync=0.2e-3)
    assert [code for code, _ in parts] == ["sync_part"] and "3.00x" in parts[0][1]
    assert step_parts(1.0e-3, 0.2e-3, 1.0e-3, 0.2e-3) == []


def test_a_part_replaces_unexplained_in_the_verdict():
    from mpibench.results.compare import judge

    cal = Calibration(alpha_s=1e-6, beta_s_per_byte=1e-10, gamma_cache_s_per_byte=1e-10,
                      gamma_memory_s_per_byte=1e-10, compute_fixed_s=0, compute_per_sample_s=0,
                      cores=2, ranks_on_host=1, ranks=1)
    plain = judge(cal, "ring", 1, 4096, 2e-3, 1e-3, 1.0, {})
    assert plain["cause_codes"] == "unexplained"
    parts = [("local_work", "local work 2 ms measured against 1 ms calibrated on one rank (+100%)")]
    row = judge(cal, "ring", 1, 4096, 2e-3, 1e-3, 1.0, {}, parts=parts)
    assert row["cause_codes"] == "local_work" and "calibrated on one rank" in row["cause"]


def test_the_one_rank_step_is_looked_up_under_the_points_strategy():
    cal = calibration(one_rank_step_s={"128": 6e-4}, one_rank_step_by_strategy_s={"ps:128": 7e-4, "ring:128": 5e-4})
    assert costmodel.step_s(cal, "ps", 1, 128, 76844) == pytest.approx(7e-4)
    assert costmodel.step_s(cal, "ring", 1, 128, 76844) == pytest.approx(5e-4)
    assert costmodel.step_s(cal, "native", 1, 128, 76844) == pytest.approx(6e-4)  # the median over strategies


def test_ranks_reaching_the_sync_apart_is_named_with_the_wait():
    from mpibench.results.compare import step_parts

    # the first rank waits 0.4 ms of a 1.6 ms step for the last: named, with the figure
    parts = step_parts(measured_step=1.6e-3, measured_sync=0.6e-3, modelled_step=1.2e-3,
                       modelled_sync=0.2e-3, sync_wait=0.4e-3)
    assert [code for code, _ in parts] == ["arrival_skew", "sync_part"]
    assert "0.4 ms" in parts[0][1] and "25%" in parts[0][1]
    # a wait within the tolerance's share of the step is not a cause
    assert step_parts(1.0e-3, 0.2e-3, 1.0e-3, 0.2e-3, sync_wait=0.05e-3) == []


def test_a_wait_the_calibrated_skew_foresaw_is_no_cause():
    from mpibench.results.compare import step_parts

    # the modelled step holds a 0.4 ms wait: the measured 0.4 ms wait is no miss, nor is the local
    # work (step less sync less the modelled wait) of a step whose sync holds that wait
    foreseen = step_parts(1.6e-3, 0.6e-3, 1.6e-3, 0.2e-3, sync_wait=0.4e-3, modelled_wait=0.4e-3)
    assert "arrival_skew" not in [code for code, _ in foreseen] and "local_work" not in [c for c, _ in foreseen]
    # a wait well beyond the foreseen one is named with both figures
    beyond = step_parts(1.6e-3, 0.6e-3, 1.6e-3, 0.2e-3, sync_wait=0.4e-3, modelled_wait=0.1e-3)
    assert beyond[0][0] == "arrival_skew" and "0.4 ms" in beyond[0][1] and "0.1 ms" in beyond[0][1]


@pytest.mark.parametrize("ranks, within", [(1, False), (2, True)])
def test_a_one_rank_step_is_held_to_the_tighter_tolerance(ranks, within):
    import pandas as pd

    from mpibench.results.compare import ONE_RANK_TOLERANCE, TOLERANCE, compare_steps

    assert ONE_RANK_TOLERANCE < TOLERANCE
    cal = calibration(one_rank_step_s={"128": 5e-4})
    measured = 1.2 * 5e-4  # 20 % over the model: outside 15 %, inside 25 %
    rows = [{"strategy": "ring", "mode": "weak", "ranks": ranks, "local_batch": 128, "bytes": 76844,
             "step_time_s": measured, "step_time_p90_s": measured, "sync_time_s": 0.0, "tag": "measured"},
            {"strategy": "ring", "mode": "weak", "ranks": ranks, "local_batch": 128, "bytes": 76844,
             "step_time_s": 5e-4, "sync_time_s": 0.0, "tag": "modelled"}]
    (row,) = compare_steps(cal, pd.DataFrame(rows), {})
    assert bool(row["within"]) is within
    assert row["tolerance"] == (ONE_RANK_TOLERANCE if ranks == 1 else TOLERANCE)


def test_the_one_rank_step_measured_beside_a_point_replaces_the_calibrated_one():
    cal = calibration(one_rank_step_s={"128": 6e-4}, one_rank_step_by_strategy_s={"ring:128": 5e-4})
    beside = cal.with_one_rank_step("ring", 128, 9e-4)
    assert costmodel.step_s(beside, "ring", 1, 128, 76844) == pytest.approx(9e-4)
    assert costmodel.step_s(cal, "ring", 1, 128, 76844) == pytest.approx(5e-4)  # the original is untouched
    for missing in (None, "", float("nan"), 0.0, -1.0):  # nothing measured: the calibration stands
        assert cal.with_one_rank_step("ring", 128, missing) is cal


def test_modelled_scaling_rows_use_the_figure_measured_beside_each_point():
    from mpibench.job.scaling import _spread, modelled

    cal = calibration(one_rank_step_s={"128": 5e-4})
    points = [{"strategy": "ring", "mode": "weak", "ranks": p, "local_batch": 128, "global_batch": 128 * p,
               "bytes": 76844, "one_rank_step_s": alone, "tag": "measured", "step_time_s": alone}
              for p, alone in ((1, 8e-4), (2, 1.1e-3))]
    rows = modelled(cal, points, {})
    assert [r["one_rank_step_s"] for r in rows] == [8e-4, 1.1e-3]
    assert rows[0]["step_time_s"] == pytest.approx(8e-4)
    assert rows[1]["step_time_s"] == pytest.approx(costmodel.step_s(
        cal.with_one_rank_step("ring", 128, 1.1e-3), "ring", 2, 128, 76844))
    assert _spread([3e-4, 1e-4, None]) == pytest.approx(2e-4)
    assert _spread([3e-4]) is None and _spread([None, None]) is None
