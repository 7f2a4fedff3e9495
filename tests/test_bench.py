"""The bench command: inputs, rows, rounds, options, and whole runs under mpirun."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mpibench.job.bench import BenchPlan, Expected, bench_row, human_bytes, split_names, sweep_sizes, validate
from mpibench.job.bench.plan import DEFAULT_ROUND_S, registered, round_seconds
from mpibench.sync.registry import SHARDED
from mpibench.job.bench.rounds import MAX_CALLS_PER_ROUND, RoundTimes, calls_per_round, ratio_to, spread
from mpibench.job.bench.rows import NO_COMMUNICATION, summary_lines
from mpibench.base.config import UsageError
from mpibench.base.records import BENCH_COLUMNS
from mpirun import mpirun_command, run_cli, run_command, run_mpi

HERE = Path(__file__).parent


# ---------------------------------------------------------------------------- inputs
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ranks", [1, 2, 3, 8])
@pytest.mark.parametrize("seed", [0, 12345])
def test_expected_sum_is_the_sum_of_every_ranks_inputs(ranks, seed, dtype):
    length = 10_000
    total = sum(Expected(seed, r, ranks, length, dtype).inputs.astype(np.float64) for r in range(ranks))
    expected = Expected(seed, 0, ranks, length, dtype)
    assert expected.inputs.dtype == dtype
    assert np.array_equal(expected.sum.astype(np.float64), total)
    assert expected.wrong(expected.sum) == 0
    off = expected.sum.copy()
    off[7] += 0.25
    assert expected.wrong(off) == 1


@pytest.mark.parametrize("length", [1, 2, 3, 5000])
def test_inputs_depend_on_seed_rank_and_index_only(length):
    a = Expected(3, 1, 4, 5000).inputs
    assert np.array_equal(a[:length], Expected(3, 1, 8, length).inputs)
    assert not np.array_equal(a, Expected(3, 2, 4, 5000).inputs)
    assert not np.array_equal(a, Expected(4, 1, 4, 5000).inputs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("length", [1, 3, 1024, 16384, 1 << 18])
def test_the_inputs_and_the_baselines_receive_buffers_start_on_a_page(length, dtype):
    """The send buffer (the inputs) and every baseline's receive buffer at the same page offset:
    no launch's heap layout can put them 16 bytes apart (4K aliasing; mpibench.base.buffer_layout)."""
    from mpi4py import MPI

    from mpibench.job.bench.candidates import BlockingAllreduce, CFloorAllreduce

    expected = Expected(0, 0, 2, length, dtype)
    buffers = [expected.inputs, BlockingAllreduce(MPI.COMM_SELF, expected, False).buf,
               CFloorAllreduce(None, MPI.COMM_SELF, expected, False).buf]
    assert [b.ctypes.data % 4096 for b in buffers] == [16, 16, 16]
    assert all(b.dtype == dtype and len(b) == length for b in buffers)


# ---------------------------------------------------------------------------- rows
def test_bus_bandwidth_is_algbw_times_2_p_minus_1_over_p():
    stats = {"time_min_s": 0.5, "time_avg_s": 1.0, "time_max_s": 2.0, "errors": 0}
    row = bench_row("ring", 4, 4_000_000_000, 3, stats)
    assert row["algbw_gbps"] == pytest.approx(2.0)
    assert row["busbw_gbps"] == pytest.approx(3.0)
    assert set(row) == set(BENCH_COLUMNS) and row["tag"] == "measured" and row["note"] == ""


def test_one_rank_has_no_bandwidth_and_says_why():
    row = bench_row("ring", 1, 64 << 20, 3, {"time_min_s": 4.7e-6, "time_avg_s": 4.7e-6,
                                              "time_max_s": 4.7e-6, "errors": 0})
    assert row["algbw_gbps"] is None and row["busbw_gbps"] is None and row["note"] == NO_COMMUNICATION
    assert summary_lines([row]) == ["# Avg bus bandwidth: none at p=1 (no communication); times only"]


def test_summary_averages_busbw_per_candidate_and_counts_wrong_elements():
    def row(name, n, t, errors=0):
        return bench_row(name, 2, n, 1, {"time_min_s": t, "time_avg_s": t, "time_max_s": t, "errors": errors})
    rows = [row("blocking", 10 ** 9, 1.0), row("blocking", 10 ** 9, 0.5), row("ring", 10 ** 9, 2.0, 3)]
    lines = summary_lines(rows)
    assert "blocking 1.500" in lines[0] and "ring 0.500" in lines[0] and "mean over 1 sizes" in lines[0]
    assert lines[1].endswith("3 FAILED")


# ---------------------------------------------------------------------------- rounds
def test_spread_is_median_p90_and_cv_of_round_maxima():
    rounds = [RoundTimes(1.0, 2.0, t) for t in (3.0, 5.0, 4.0, 4.0, 9.0)]
    s = spread(rounds, 2)
    assert (s.time_min_s, s.time_avg_s, s.time_max_s, s.errors) == (1.0, 2.0, 4.0, 2)
    assert s.round_p90_s == pytest.approx(np.percentile([3, 5, 4, 4, 9], 90))
    assert s.round_cv_pct == pytest.approx(np.std([3, 5, 4, 4, 9], ddof=1) / 5.0 * 100)
    assert spread(rounds[:1], 0).round_cv_pct == 0.0


def test_ratio_to_is_the_median_of_per_round_ratios():
    base = spread([RoundTimes(0, 0, t) for t in (1.0, 2.0, 4.0)], 0)
    other = spread([RoundTimes(0, 0, t) for t in (2.0, 2.0, 2.0)], 0)
    assert ratio_to(base, other) == pytest.approx(1.0)  # ratios 0.5, 1, 2
    assert ratio_to(None, other) is None


# ---------------------------------------------------------------------------- options
def test_sweep_sizes_like_nccl_tests():
    assert sweep_sizes(4, 64, 2) == [4, 8, 16, 32, 64]
    assert sweep_sizes(1024, 5000, 4) == [1024, 4096]
    for bad in ((0, 8, 2), (16, 8, 2), (4, 64, 1.0)):
        with pytest.raises(UsageError):
            sweep_sizes(*bad)


def test_strategy_names_come_from_the_registry():
    names, c_named = split_names("all")
    assert list(names) == registered() and not c_named
    assert split_names("ring,c_floor,blocking,ring") == (("ring",), True)
    with pytest.raises(UsageError):
        split_names("ring,butterfly")
    with pytest.raises(UsageError):
        split_names(" , ")


@pytest.mark.parametrize("plan", [
    BenchPlan(("ring",), (6,)), BenchPlan(("ring",), ()), BenchPlan(("ring",), (4,), iterations=0),
    BenchPlan(("ring",), (4,), rounds=0), BenchPlan(("ring",), (4,), dtype="float64"),
    BenchPlan(("ring",), (8,), dtype="int8"), BenchPlan(("ring",), (8,), c_floor="maybe"),
    BenchPlan(("ring",), (4,), round_s=-0.001), BenchPlan(("ring",), (4,), round_s=11.0),
])
def test_validate_refuses(plan):
    with pytest.raises(UsageError):
        validate(plan)


@pytest.mark.parametrize("round_ms, iterations, expected_s", [
    (None, None, DEFAULT_ROUND_S), (None, 20, 0.0), (None, 1, 0.0), (10.0, None, 0.01), (0.0, None, 0.0),
    (5.0, 100, 0.005)])
def test_a_round_is_time_filled_unless_a_call_count_is_given(round_ms, iterations, expected_s):
    # a count given is run exactly (as IMB's -iter with -iter_policy off); left to bench, the
    # calls fill the default time
    assert round_seconds(round_ms, iterations) == pytest.approx(expected_s)


class _Probe:
    def __init__(self, call_s):
        self.call_s = call_s

    def time_calls(self, calls):
        from mpibench.job.bench.timed import Timed

        return Timed(np.full(calls, self.call_s), 0)


class _OneRank:
    def allreduce(self, value, op=None):
        return value


@pytest.mark.parametrize("call_s, minimum, round_s, calls", [
    (1e-5, 20, 0.05, 5000), (1e-2, 20, 0.05, 20), (1e-3, 20, 0.0, 20), (1e-9, 1, 0.05, MAX_CALLS_PER_ROUND),
    (2e-3, 1, 0.05, 25), (0.0, 3, 0.05, MAX_CALLS_PER_ROUND)])
def test_calls_per_round_fill_the_round_and_never_fall_below_the_count(call_s, minimum, round_s, calls):
    assert calls_per_round(_OneRank(), _Probe(call_s), minimum, round_s) == calls


def test_human_bytes():
    assert human_bytes(4096) == "4 KiB" and human_bytes(16 << 20) == "16 MiB" and human_bytes(12) == "12 B"


# ---------------------------------------------------------------------------- whole runs
def _check_measured(rows, ranks):
    m = rows[rows.tag == "measured"]
    unchecked = m.errors.astype(str) == ""
    assert set(m[unchecked].strategy) <= {"floor", "anchor"}  # no reduction of its own / checked by the tool
    assert (m[~unchecked].errors.astype(int) == 0).all() and (m.ranks == ranks).all()
    for col in ("time_min_s", "time_avg_s", "time_max_s"):
        m[col] = m[col].astype(float)
    assert (m.time_min_s <= m.time_avg_s + 1e-12).all() and (m.time_avg_s <= m.time_max_s + 1e-12).all()
    assert (m.round_p90_s.astype(float) >= m.time_max_s - 1e-12).all()
    return m


@pytest.mark.mpi
def test_bench_writes_baselines_strategies_and_modelled_rows(tmp_path):
    job = run_mpi(3, ["bench", "--sizes", "4,12,4K,1M", "--iterations", "2", "--rounds", "2", "--warmup", "1",
                      "--bucket-bytes", "64K", "--ps-shards", "5"], out=tmp_path, timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    rows = job.csv("bench.csv")
    assert list(rows.columns) == BENCH_COLUMNS
    m = _check_measured(rows, 3)
    names = set(m.strategy)
    # the sharded strategies' two halves are rows of their own, beside the whole all-reduce
    halves = {f"{name}:{part}" for name in SHARDED for part in ("reduce-scatter", "all-gather")}
    assert names == {"blocking", "c_floor", "floor", *registered(), *halves}  # mpicc ships with the PyPI Open MPI
    assert len(m) == 4 * len(names) and sorted(set(m.bytes)) == [4, 12, 4096, 1 << 20]
    floor = m[m.strategy == "floor"]
    assert (floor.errors == "").all() and floor.label.str.contains("no MPI").all()
    m = m[m.strategy != "floor"]  # not a collective: no modelled twin
    assert (m[m.strategy == "blocking"].vs_blocking.astype(float) == 1.0).all()
    assert set(m[m.strategy.isin(registered())].in_place) == {True}
    assert set(m[m.strategy == "blocking"].in_place) == {False}
    assert (m["count"].astype(int) * 4 == m.bytes).all() and set(m.dtype) == {"float32"} and set(m.op) == {"sum"}
    busbw, algbw = m.busbw_gbps.astype(float), m.algbw_gbps.astype(float)
    half = m.strategy.isin(halves)  # nccl-tests: 2(p-1)/p for an all-reduce, (p-1)/p for each half
    assert np.allclose(busbw[~half], algbw[~half] * 4 / 3) and np.allclose(busbw[half], algbw[half] * 2 / 3)
    assert np.allclose(algbw, m.bytes / m.time_max_s / 1e9)
    modelled = rows[rows.tag == "modelled"]
    assert len(modelled) == len(m)  # the model knows every registered strategy and both baselines
    pair = m.merge(modelled, on=["strategy", "bytes"], suffixes=("", "_model"))
    assert np.allclose(pair.model_ratio_model.astype(float), pair.time_max_s / pair.time_max_s_model.astype(float))
    comparison = job.csv("comparison.csv")
    assert len(comparison) == len(m) and set(comparison.kind) == {"collective"}
    flagged = comparison[~comparison.within.astype(bool)]
    assert (flagged.cause != "").all()
    assert "calibration" in json.loads((tmp_path / "run.json").read_text())
    assert job.stdout.count("bench  ") == len(m) + len(floor) + 1  # header and one line per measured row
    assert "# Avg bus bandwidth" in job.stdout


@pytest.mark.mpi
def test_bench_reuses_a_calibration_and_sweeps_sizes_at_float64(tmp_path):
    first = run_mpi(2, ["bench", "--sizes", "4K", "--iterations", "1", "--rounds", "1", "--warmup", "0",
                        "--strategies", "ring"], out=tmp_path / "a", timeout=180)
    assert first.returncode == 0, first.text[-3000:]
    job = run_mpi(2, ["bench", "--min-bytes", "8", "--max-bytes", "64K", "--factor", "16", "--dtype", "float64",
                      "--in-place", "--c-baseline", "off", "--iterations", "2", "--rounds", "2",
                      "--calibration", str(tmp_path / "a" / "run.json")], out=tmp_path / "b", timeout=180)
    assert job.returncode == 0, job.text[-3000:]
    assert "calibrating" not in job.stdout and "strategies left out at float64" in job.stdout
    rows = job.csv("bench.csv")
    m = _check_measured(rows, 2)
    assert set(m.strategy) == {"blocking", "floor"} and sorted(set(m.bytes)) == [8, 128, 2048, 32768]
    m = m[m.strategy == "blocking"]
    assert set(m.dtype) == {"float64"} and set(m.in_place) == {True} and (m["count"] * 8 == m.bytes).all()
    assert (rows.tag == "modelled").sum() == len(m)


@pytest.mark.mpi
def test_one_rank_rows_carry_no_bandwidth(tmp_path):
    job = run_mpi(1, ["bench", "--sizes", "64K", "--iterations", "2", "--rounds", "2", "--warmup", "0",
                      "--strategies", "ring", "--no-model"], out=tmp_path, timeout=120)
    assert job.returncode == 0, job.text[-3000:]
    rows = job.csv("bench.csv")
    assert set(rows.tag) == {"measured"} and set(rows.strategy) >= {"blocking", "ring"}
    assert (rows.algbw_gbps == "").all() and (rows.busbw_gbps == "").all()
    assert set(rows.note) == {NO_COMMUNICATION} and "none at p=1" in job.stdout


@pytest.mark.mpi
def test_more_ranks_than_cores_is_marked_on_every_row(tmp_path):
    from mpibench.job.timing import cores_available

    ranks = cores_available() + 1
    job = run_mpi(ranks, ["bench", "--sizes", "4K", "--iterations", "1", "--rounds", "1", "--warmup", "0",
                          "--strategies", "ring", "--no-model", "--c-baseline", "off"], out=tmp_path, timeout=180)
    assert job.returncode == 0, job.text[-3000:]
    rows = job.csv("bench.csv")
    assert rows.note.str.contains("oversubscribed").all() and "# oversubscribed" in job.stdout


@pytest.mark.mpi
def test_a_wrong_reduction_fails_the_bench(tmp_path):
    cmd = mpirun_command() + ["-n", "2", sys.executable, str(HERE / "bench_broken_driver.py"), "bench",
                              "--sizes", "4K", "--strategies", "ring,native", "--iterations", "2",
                              "--rounds", "1", "--warmup", "0", "--no-model", "--out", str(tmp_path)]
    job = run_command(cmd, timeout=120, out=tmp_path)
    assert job.returncode == 1, job.text[-3000:]
    rows = job.csv("bench.csv").set_index("strategy")
    assert rows.loc["ring", "errors"] == 1 and rows.loc["native", "errors"] == 0  # one round: one checked call
    assert rows.loc["blocking", "errors"] == 0
    assert "wrong" in job.stdout


@pytest.mark.mpi
def test_c_baseline_on_that_cannot_build_could_not_run(tmp_path, monkeypatch):
    """--c-baseline on with a compiler that does not work: exit 3, never a pass."""
    monkeypatch.setenv("MPIBENCH_MPICC", str(tmp_path / "no-such-mpicc"))
    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    job = run_mpi(2, ["bench", "--sizes", "4K", "--iterations", "1", "--rounds", "1", "--no-model",
                      "--strategies", "ring", "--c-baseline", "on"], out=tmp_path / "out", timeout=120,
                  mpirun=mpirun_command() + ["-x", "MPIBENCH_MPICC", "-x", "MPIBENCH_CACHE"])
    assert job.returncode == 3, job.text[-3000:]
    assert "could not run" in job.stdout and "no-such-mpicc" in job.stdout


def test_c_floor_builds_once_into_the_cache(tmp_path, monkeypatch):
    from mpibench.job.bench import cfloor

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path))
    mpicc = cfloor.find_mpicc()
    assert mpicc is not None, "the embedded-mpi extra ships mpicc"
    path = cfloor.build(mpicc)
    assert path.parent == tmp_path and path.exists()
    stamp = path.stat().st_mtime_ns
    assert cfloor.build(mpicc) == path and path.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind


@pytest.mark.parametrize("args", [
    ["--sizes", "4X"], ["--sizes", "6"], ["--sizes", "1.5"], ["--bucket-bytes", "2"],
    ["--bucket-bytes", "lots"], ["--strategies", "ring,butterfly"], ["--iterations", "0"],
    ["--ps-shards", "-1"], ["--rounds", "0"], ["--dtype", "int8"], ["--sizes", "12", "--dtype", "float64"],
    ["--min-bytes", "4K"], ["--sizes", "4K", "--min-bytes", "4", "--max-bytes", "8"],
    ["--min-bytes", "8", "--max-bytes", "4"], ["--min-bytes", "4", "--max-bytes", "8", "--factor", "1"],
    ["--calibration", "/nonexistent/cal.json"], ["--c-baseline", "sometimes"],
])
def test_bad_bench_input_exits_2_with_one_line(args):
    job = run_cli(["bench", *args])
    assert job.returncode == 2, job.text
    lines = job.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpibench: error:"), job.stderr


@pytest.mark.mpi
def test_without_a_call_count_small_sizes_get_more_calls_and_every_candidate_the_same(tmp_path):
    # 100 ms of 4 KiB calls is far more than the 20-call minimum on any host that can run
    # MPI at all (a call would have to take 5 ms); 16 MiB calls keep the minimum only when
    # a call takes 5 ms or more, so only the small size's count is pinned down.
    job = run_mpi(2, ["bench", "--sizes", "4K,64K", "--strategies", "ring", "--round-ms", "100", "--rounds", "2",
                      "--warmup", "1", "--no-model", "--c-baseline", "off"], out=tmp_path, timeout=180)
    assert job.returncode == 0, job.text[-3000:]
    m = _check_measured(job.csv("bench.csv"), 2)
    per_size = m.groupby("bytes").iterations.agg(["min", "max"])
    assert (per_size["min"] == per_size["max"]).all(), per_size  # one count per size, for every candidate
    assert per_size.loc[4096, "min"] > 20, per_size
    assert "enough to last 100 ms" in job.stdout
