"""The bench command: rows, bandwidth arithmetic, result checking, bad input."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mpibench.bench import Expected, bench_row, human_bytes, validate
from mpibench.config import UsageError
from mpibench.records import BENCH_COLUMNS
from mpirun import mpirun_command, run_cli, run_command, run_mpi

HERE = Path(__file__).parent


@pytest.mark.parametrize("ranks", [1, 2, 3, 8])
@pytest.mark.parametrize("seed", [0, 12345])
def test_expected_sum_is_the_sum_of_every_ranks_inputs(ranks, seed):
    length = 10_000
    total = sum(Expected(seed, r, ranks, length).inputs.astype(np.float64) for r in range(ranks))
    expected = Expected(seed, 0, ranks, length)
    assert np.array_equal(expected.sum.astype(np.float64), total)
    assert expected.wrong(expected.sum) == 0
    off = expected.sum.copy()
    off[7] += 0.25
    assert expected.wrong(off) == 1


def test_inputs_depend_on_seed_rank_and_index_only():
    a = Expected(3, 1, 4, 5000).inputs
    assert np.array_equal(a[:100], Expected(3, 1, 8, 100).inputs)
    assert not np.array_equal(a, Expected(3, 2, 4, 5000).inputs)
    assert not np.array_equal(a, Expected(4, 1, 4, 5000).inputs)


def test_bus_bandwidth_is_algbw_times_2_p_minus_1_over_p():
    stats = {"time_min_s": 0.5, "time_avg_s": 1.0, "time_max_s": 2.0, "errors": 0}
    row = bench_row("ring", 4, 4_000_000_000, 3, stats)
    assert row["algbw_gbps"] == pytest.approx(2.0)
    assert row["busbw_gbps"] == pytest.approx(3.0)
    assert set(row) == set(BENCH_COLUMNS) and row["tag"] == "measured"


def test_validate_and_human_bytes():
    assert human_bytes(4096) == "4 KiB" and human_bytes(16 << 20) == "16 MiB" and human_bytes(12) == "12 B"
    for bad in ([["ring"], [6], 1, 0], [["nope"], [4], 1, 0], [["ring"], [], 1, 0], [["ring"], [4], 0, 0]):
        with pytest.raises(UsageError):
            validate(*bad)


@pytest.mark.mpi
def test_bench_under_mpirun_writes_checked_rows(tmp_path):
    job = run_mpi(3, ["bench", "--sizes", "4,12,4K,1M", "--iterations", "3", "--warmup", "1",
                      "--bucket-bytes", "64K", "--ps-shards", "5"], out=tmp_path, timeout=180)
    assert job.returncode == 0, job.text[-3000:]
    rows = job.csv("bench.csv")
    assert list(rows.columns) == BENCH_COLUMNS
    assert len(rows) == 4 * 3
    assert set(rows.strategy) == {"ring", "ps", "native"}
    assert (rows.errors == 0).all() and (rows.tag == "measured").all() and (rows.ranks == 3).all()
    assert sorted(set(rows.bytes)) == [4, 12, 4096, 1 << 20]
    assert (rows.time_min_s <= rows.time_avg_s).all() and (rows.time_avg_s <= rows.time_max_s).all()
    assert np.allclose(rows.busbw_gbps, rows.algbw_gbps * 4 / 3)
    assert np.allclose(rows.algbw_gbps, rows.bytes / rows.time_max_s / 1e9)
    assert job.stdout.count("bench ") == 12  # one progress line per row, rank 0 only


@pytest.mark.mpi
def test_a_wrong_reduction_fails_the_bench(tmp_path):
    cmd = mpirun_command() + ["-n", "2", sys.executable, str(HERE / "bench_broken_driver.py"), "bench",
                              "--sizes", "4K", "--strategies", "ring,native", "--iterations", "2",
                              "--warmup", "0", "--out", str(tmp_path)]
    job = run_command(cmd, timeout=120, out=tmp_path)
    assert job.returncode == 1, job.text[-3000:]
    rows = job.csv("bench.csv").set_index("strategy")
    assert rows.loc["ring", "errors"] == 2 and rows.loc["native", "errors"] == 0
    assert "wrong" in job.stdout


@pytest.mark.parametrize("args", [
    ["--sizes", "4X"], ["--sizes", "6"], ["--sizes", "1.5"], ["--bucket-bytes", "2"],
    ["--bucket-bytes", "lots"], ["--strategies", "ring,butterfly"], ["--iterations", "0"],
    ["--ps-shards", "-1"],
])
def test_bad_bench_input_exits_2_with_one_line(args):
    job = run_cli(["bench", *args])
    assert job.returncode == 2, job.text
    lines = job.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpibench: error:"), job.stderr
