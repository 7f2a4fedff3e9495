"""compare A B: two real bench runs, a planted 2x slowdown, old files, bad input, machines."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from mpibench.base.records import BENCH_COLUMNS
from mpibench.results.machines import machine_of
from mpibench.results.runcompare import compare_runs, read_measured, spread_s
from mpirun import run_cli, run_mpi

BENCH_ARGS = ["bench", "--sizes", "4K,64K", "--strategies", "ring", "--iterations", "10", "--rounds", "5",
              "--warmup", "2", "--no-model"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two real bench runs of the same plan, one after the other."""
    root = tmp_path_factory.mktemp("runs")
    for name in ("a", "b"):
        job = run_mpi(2, BENCH_ARGS, out=root / name, timeout=180)
        assert job.returncode == 0, job.text[-3000:]
    return root / "a", root / "b"


def planted(src, dst, factor: float):
    """A copy of run ``src`` whose every time is ``factor`` times longer (spreads scale too)."""
    dst.mkdir()
    rows = pd.read_csv(src / "bench.csv", keep_default_na=False)
    for column in ("time_min_s", "time_avg_s", "time_max_s", "round_p90_s"):
        rows[column] = rows[column] * factor
    rows.to_csv(dst / "bench.csv", index=False)
    return dst


@pytest.mark.mpi
def test_two_real_runs_are_matched_row_by_row(two_runs, tmp_path):
    a, b = two_runs
    out = tmp_path / "table.csv"
    job = run_cli(["compare", str(a), str(b / "bench.csv"), "--out", str(out)])
    assert job.returncode in (0, 1), job.text
    table = pd.read_csv(out)
    assert len(table) == 2 * 3  # blocking, c_floor, ring at two sizes
    ra, rb = (pd.read_csv(p / "bench.csv").set_index(["strategy", "bytes"]) for p in (a, b))
    for r in table.itertuples():
        key = (r.strategy, r.bytes)
        assert r.ratio == pytest.approx(rb.loc[key, "time_max_s"] / ra.loc[key, "time_max_s"])
    assert (job.returncode == 1) == bool(table.regressed.any())
    same = run_cli(["compare", str(a), str(a)])
    assert same.returncode == 0 and "0 regression(s)" in same.stdout, same.text


@pytest.mark.mpi
def test_a_planted_2x_slowdown_is_a_regression(two_runs, tmp_path):
    a, _ = two_runs
    slow = planted(a, tmp_path / "slow", 2.0)
    job = run_cli(["compare", str(a), str(slow), "--out", str(tmp_path / "t.csv")])
    table = pd.read_csv(tmp_path / "t.csv")
    assert (table.ratio.round(9) == 2.0).all()
    # Beyond noise wherever the run's own spread is below the planted difference.
    quiet = table[table.a_time_s > table.b_spread_s]
    assert len(quiet) > 0, "every row noisier than 2x: the run was too disturbed to judge"
    assert quiet.regressed.all()
    assert job.returncode == 1, job.text
    back = run_cli(["compare", str(slow), str(a)])  # the other way round: improvements, exit 0
    assert back.returncode == 0 and "improvement" in back.stdout


def _frame(times, p90s=None, cvs=None):
    rows = []
    for i, t in enumerate(times):
        row = dict.fromkeys(BENCH_COLUMNS, "")
        row.update(strategy="ring", ranks=2, bytes=4096 * (i + 1), time_max_s=t, tag="measured",
                   dtype="float32", in_place="true")
        if p90s is not None:
            row.update(round_p90_s=p90s[i], round_cv_pct=cvs[i])
        rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("threshold", [0.0, 0.2, 1.5])
def test_regression_needs_both_the_threshold_and_to_exceed_the_spread(tmp_path, threshold):
    _frame([1.0, 1.0, 1.0], [1.1, 1.1, 3.0], [5, 5, 5]).to_csv(tmp_path / "a.csv", index=False)
    _frame([2.0, 1.05, 2.0], [2.2, 1.1, 2.2], [5, 5, 5]).to_csv(tmp_path / "b.csv", index=False)
    table = compare_runs(read_measured(str(tmp_path / "a.csv")), read_measured(str(tmp_path / "b.csv")), threshold)
    assert list(table.beyond_noise) == [True, False, False]  # row 3: A's own p90 spread is 2 s
    assert list(table.regressed) == [threshold < 1.0, False, False]


def test_files_without_rounds_are_judged_on_the_threshold_alone(tmp_path):
    _frame([1.0]).to_csv(tmp_path / "a.csv", index=False)
    _frame([3.0]).to_csv(tmp_path / "b.csv", index=False)
    a = read_measured(str(tmp_path / "a.csv"))
    assert math.isnan(a.spread_s.iloc[0])
    table = compare_runs(a, read_measured(str(tmp_path / "b.csv")), 0.2)
    assert table.regressed.all() and "no spread recorded" in table.verdict.iloc[0]


def test_spread_is_the_larger_of_p90_and_cv():
    assert spread_s({"time_max_s": 2.0, "round_p90_s": 2.5, "round_cv_pct": 10}) == pytest.approx(0.5)
    assert spread_s({"time_max_s": 2.0, "round_p90_s": 2.1, "round_cv_pct": 20}) == pytest.approx(0.4)


@pytest.mark.parametrize("case", ["missing", "not_bench", "empty", "no_common", "bad_threshold", "out_exists"])
def test_bad_compare_input_exits_2_with_one_line(tmp_path, case):
    good = tmp_path / "good.csv"
    _frame([1.0]).to_csv(good, index=False)
    other = tmp_path / "other.csv"
    args = [str(good), str(other)]
    if case == "missing":
        pass
    elif case == "not_bench":
        other.write_text("a,b\n1,2\n")
    elif case == "empty":
        other.write_text("")
    elif case == "no_common":
        _frame([1.0]).assign(strategy="ps").to_csv(other, index=False)
    elif case == "bad_threshold":
        args = [str(good), str(good), "--threshold", "-1"]
    elif case == "out_exists":
        other.write_text("keep me")
        args = [str(good), str(good), "--out", str(other)]
    job = run_cli(["compare", *args])
    assert job.returncode == 2, job.text
    lines = job.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpibench: error:"), job.stderr
    if case == "out_exists":
        assert other.read_text() == "keep me"


# What runinfo.machine() and the host record leave in run.json, as a bench run on a cluster node would.
MACHINE = {"schema_version": 1, "cpu_model": "AMD EPYC 7763 64-Core Processor", "cores_on_this_host": 128,
           "mpi": {"library": "Open MPI v5.0.5", "standard": "3.1", "mpi4py": "4.0.1"},
           "platform": "Linux-6.1.0-x86_64-with-glibc2.36", "python": "3.11.7",
           "host_cpus": [{"host": "node1", "cores": 128, "ranks": 2, "binding": "core"}]}


def run_folder(path, times, machine=None):
    """A run folder: bench.csv with one ring row per time, and run.json when ``machine`` is given."""
    path.mkdir(parents=True)
    _frame(times).to_csv(path / "bench.csv", index=False)
    if machine is not None:
        (path / "run.json").write_text(json.dumps(machine))
    return path


def test_the_same_machine_says_nothing_whatever_the_host_names(tmp_path):
    a = run_folder(tmp_path / "a", [1.0], MACHINE)
    b = run_folder(tmp_path / "b", [1.0], {**MACHINE, "host_cpus": [{**MACHINE["host_cpus"][0], "host": "node7"}]})
    job = run_cli(["compare", str(a), str(b), "--out", str(tmp_path / "t.csv")])
    assert job.returncode == 0, job.text
    assert "machine" not in job.stdout, job.stdout
    assert pd.read_csv(tmp_path / "t.csv", keep_default_na=False).machines.tolist() == [""]


@pytest.mark.parametrize("b_times, status", [([1.0], 0), ([3.0], 1)])
def test_a_different_machine_is_named_field_by_field_and_keeps_the_status(tmp_path, b_times, status):
    a = run_folder(tmp_path / "a", [1.0], MACHINE)
    b = run_folder(tmp_path / "b", b_times, {**MACHINE, "cpu_model": "Intel Xeon Platinum 8480+",
                                             "mpi": {**MACHINE["mpi"], "library": "MPICH 4.2.2"}})
    job = run_cli(["compare", str(a), str(b), "--out", str(tmp_path / "t.csv")])
    assert job.returncode == status, job.text
    line = ("different machines: cpu_model 'AMD EPYC 7763 64-Core Processor' vs 'Intel Xeon Platinum 8480+'; "
            "mpi_library 'Open MPI v5.0.5' vs 'MPICH 4.2.2' — ratios compare the machines as well as the code")
    lines = job.stdout.splitlines()
    assert lines[0] == line and lines[1].startswith("strategy"), job.stdout  # before the table, once
    assert job.stdout.count("different machines") == 1
    assert pd.read_csv(tmp_path / "t.csv").machines.tolist() == [line]


@pytest.mark.parametrize("b_times, status", [([1.0], 0), ([3.0], 1)])
def test_a_run_without_a_fingerprint_is_said_once_and_keeps_the_status(tmp_path, b_times, status):
    old = {"schema_version": 1, "host_cpus": MACHINE["host_cpus"]}  # a bench run.json from before machines
    a = run_folder(tmp_path / "a", [1.0], old)
    b = run_folder(tmp_path / "b", b_times, MACHINE)
    job = run_cli(["compare", str(a), str(b / "bench.csv")])
    assert job.returncode == status, job.text
    assert job.stdout.splitlines()[0] == "machine of A unknown (no fingerprint)", job.stdout
    assert job.stdout.count("unknown (no fingerprint)") == 1
    bare = run_folder(tmp_path / "c", b_times)  # a bench.csv alone: no run.json at all
    job = run_cli(["compare", str(tmp_path / "b" / "bench.csv"), str(bare)])
    assert job.returncode == 0 and job.stdout.count("machine of B unknown (no fingerprint)") == 1, job.text
    job = run_cli(["compare", str(a), str(bare)])
    assert job.returncode == status and job.stdout.count("machines of A and B unknown (no fingerprint)") == 1


def test_a_field_one_side_never_recorded_is_no_difference():
    from mpibench.results.machines import Machine, check_machines, machine_line

    older = Machine(cpu_model=None, cpus=128, mpi_library="Open MPI v5.0.5", python="3.11.7")
    newer = Machine(cpu_model="AMD EPYC 7763", cpus=128, mpi_library="Open MPI v5.0.5", python="3.12.1")
    assert machine_line(check_machines(older, newer)) == (
        "different machines: python '3.11.7' vs '3.12.1' — ratios compare the machines as well as the code")


def test_launch_sets_are_checked_by_their_launches_machine(tmp_path):
    sides = []
    for name, python in (("a", "3.11.7"), ("b", "3.12.1")):
        for n in (1, 2):
            run_folder(tmp_path / name / f"launch-{n:02d}", [1e-3 * (1 + n / 100)], {**MACHINE, "python": python})
        sides.append(tmp_path / name)
    assert machine_of(str(sides[0])).python == "3.11.7"
    job = run_cli(["compare", *map(str, sides), "--out", str(tmp_path / "t.csv")])
    assert job.returncode == 0, job.text
    assert job.stdout.splitlines()[0].startswith("different machines: python '3.11.7' vs '3.12.1'"), job.stdout
    assert pd.read_csv(tmp_path / "t.csv").machines.str.startswith("different machines").all()


@pytest.mark.mpi
def test_two_real_runs_record_one_machine(two_runs):
    a, b = two_runs
    assert machine_of(str(a)) == machine_of(str(b)) and machine_of(str(a)).mpi_library
    job = run_cli(["compare", str(a), str(b)])
    assert "machine" not in job.stdout, job.text
