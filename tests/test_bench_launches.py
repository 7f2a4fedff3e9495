"""``bench --launches N``: the driver, the combined tables, and one real run of the user's command."""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from mpibench.base.records import BENCH_COLUMNS
from mpibench.drive.launches import clear_launches, job_args
from mpibench.results import launchstats as ls
from mpibench.results.launchtable import INTERVAL_COLUMNS, combine, read_launches, states, verdict_lines
from mpirun import mpi_env, run_command


@pytest.mark.parametrize("argv, kept", [
    (["--launches", "6", "--sizes", "4K"], ["--sizes", "4K"]),
    (["--launches=6", "--np", "2", "--out", "x", "--force", "--rounds", "3"], ["--rounds", "3"]),
    (["--sizes", "1M", "--launch-deadline", "60"], ["--sizes", "1M"]),
])
def test_the_driver_keeps_only_the_jobs_own_options(argv, kept):
    assert job_args(argv) == kept


def _launch_folder(folder, rng, launch_state: str, ring_ratio: float, model_ratio: float):
    folder.mkdir(parents=True)
    blocking_s = (2e-3 if launch_state == "slow" else 1e-3) * np.exp(rng.normal(0, 0.02))
    rows = []
    for name, ratio in (("blocking", 1.0), ("ring", ring_ratio)):
        t = blocking_s / ratio
        row = {c: None for c in BENCH_COLUMNS}
        row.update(strategy=name, ranks=2, bytes=1 << 20, iterations=20, time_min_s=t, time_avg_s=t,
                   time_max_s=t, errors=0, tag="measured", vs_blocking=ratio)
        twin = dict(row, tag="modelled", time_max_s=t / model_ratio, model_ratio=model_ratio, vs_blocking=None)
        rows += [row, twin]
    pd.DataFrame(rows, columns=BENCH_COLUMNS).to_csv(folder / "bench.csv", index=False)
    pingpong = 800e-6 if launch_state == "slow" else 170e-6
    pd.DataFrame([{"pingpong_1mib_s": pingpong * np.exp(rng.normal(0, 0.02)), "memcpy_gbps": 10.0,
                   "add_gbps": 20.0, "ranks": 2, "load_1min": 1.0}]).to_csv(folder / "fingerprint.csv", index=False)


@pytest.mark.parametrize("seed", [0, 1])
def test_six_launches_in_two_states_combine_into_intervals_and_verdicts(tmp_path, seed):
    """Blocking's time moves 2x with the launch state, but ring's paired ratio stays 1.3x: faster."""
    rng = np.random.default_rng(seed)
    names = ["fast", "slow", "slow", "fast", "slow", "fast"]
    folders = []
    for i, state in enumerate(names, start=1):
        folder = tmp_path / f"launch-{i:02d}"
        _launch_folder(folder, rng, state, 1.3 * np.exp(rng.normal(0, 0.03)), 2.0 * np.exp(rng.normal(0, 0.03)))
        folders.append(str(folder))
    rows, prints = read_launches(folders)
    state_of = states(prints)
    assert [state_of[i] for i in range(1, 7)] == names
    table = combine(rows, state_of, BENCH_COLUMNS)
    assert list(table.columns) == BENCH_COLUMNS + INTERVAL_COLUMNS
    ring = table[table.strategy == "ring"].iloc[0]
    assert ring.verdict == ls.FASTER and ring.launches == 6 and ring.confidence_pct == pytest.approx(96.9)
    assert ring.vs_blocking_low <= ring.vs_blocking <= ring.vs_blocking_high
    assert ring.time_max_s_low < 1e-3 < 1.4e-3 < ring.time_max_s_high  # both states inside the time's interval
    assert "fast" in ring.by_state and "slow" in ring.by_state
    assert ring.model_call == "flagged: slower than the model"  # measured twice the model in every launch
    assert ring.margin_pct == 10.0 and 0 < ring.resolution_pct < 20
    blocking = table[table.strategy == "blocking"].iloc[0]
    assert pd.isna(blocking.verdict)  # the denominator is not compared with itself
    lines = verdict_lines(table)
    assert any("faster" in line for line in lines)
    assert "95% confidence against a margin of ±10%" in lines[-1]


@pytest.mark.parametrize("name", ["ring", "my_plugins.sync:LongNamedStrategy"])
def test_every_printed_cell_stands_apart_however_long(name):
    """Long cells ("can't tell" with two-digit ratios) and long plugin names keep two spaces
    between columns, so the printed table splits back into its cells."""
    cells = [(ls.CANNOT_TELL, 10.61, 0.55, 11.15), (ls.FASTER, 1.27, 1.2, 1.35), (ls.SAME, 1.0, 0.98, 1.02)]
    sizes = [4096, 65536, 1 << 20]
    rows = [dict(strategy=name, bytes=n, verdict=v, vs_blocking=r, vs_blocking_low=lo, vs_blocking_high=hi)
            for n, (v, r, lo, hi) in zip(sizes, cells)]
    rows.append(dict(strategy="auto", bytes=4096, verdict=ls.SLOWER, vs_blocking=0.47, vs_blocking_low=0.39,
                     vs_blocking_high=0.49))
    lines = verdict_lines(pd.DataFrame(rows))
    split = [[part.strip() for part in line.split("  ") if part.strip()] for line in lines[:-1]]
    assert [len(parts) for parts in split] == [4, 4, 4], lines
    assert split[1][:2] == [name, "can't tell 10.61x [0.55,11.15]"]
    assert split[2] == ["auto", "slower 0.47x [0.39,0.49]", "-", "-"]
    assert len({len(line) for line in lines[:-1]}) == 1  # every column right-aligned to one width


def test_bench_launches_runs_the_job_twice_and_combines(tmp_path):
    """The user's path: no mpirun, two launches of a short bench, each in its own folder."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mpibench", "bench", "--launches", "2", "--np", "2", "--sizes", "4K",
           "--strategies", "ring", "--rounds", "2", "--iterations", "3", "--warmup", "1", "--no-model",
           "--c-baseline", "off", "--out", str(out)]
    job = run_command(cmd, timeout=300, cwd=tmp_path, env={**mpi_env(), "OMPI_MCA_smsc": "^cma"})
    assert job.returncode == 0, job.text
    assert "launch 2/2 exit 0" in job.stdout
    for n in (1, 2):
        folder = out / f"launch-0{n}"
        assert (folder / "bench.csv").exists() and (folder / "fingerprint.csv").exists(), job.text
        assert pd.read_csv(folder / "fingerprint.csv").pingpong_1mib_s.iloc[0] > 0
        assert "OMPI_MCA_smsc=^cma" in next(line for line in (folder / "stdout.txt").read_text().splitlines()
                                             if line.startswith("# MPI settings from the environment:"))
    table = pd.read_csv(out / "bench.csv")
    assert list(table.columns) == BENCH_COLUMNS + INTERVAL_COLUMNS
    ring = table[table.strategy == "ring"].iloc[0]
    assert ring.launches == 2 and ring.verdict in (ls.TOO_FEW, ls.SAME)  # two launches claim no difference at 95 %
    launches = pd.read_csv(out / "launches.csv")
    assert len(launches) == 2 and all("OMPI_MCA_smsc=^cma" in s.split() for s in launches.mpi_settings)


def test_launches_under_a_launcher_is_refused_in_one_line(tmp_path):
    env = {**mpi_env(), "MPIBENCH_SELF_LAUNCHED": "1"}
    job = run_command([sys.executable, "-m", "mpibench", "bench", "--launches", "3", "--out", str(tmp_path / "o")],
                      timeout=60, env=env, cwd=tmp_path)
    assert job.returncode == 2 and "run it without mpirun" in job.stderr
    assert len(job.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, words", [
    (["--np", "3"], "go with --launches"),
    (["--launches", "3", "--launch-deadline", "0"], "--launch-deadline must be a positive number"),
    (["--launches", "0"], "--launches"),
])
def test_bad_launch_options_are_one_line_and_exit_2(tmp_path, args, words):
    job = run_command([sys.executable, "-m", "mpibench", "bench", *args, "--out", str(tmp_path / "o")],
                      timeout=60, cwd=tmp_path)
    assert job.returncode == 2 and words in job.stderr, job.text
    assert len(job.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


@pytest.mark.slow  # a preflight and a refused launch: about 25 s under load
def test_bad_job_input_under_launches_is_the_jobs_own_line_and_leaves_nothing(tmp_path):
    """The job itself checks its options: its first launch is refused, the driver stops there."""
    job = run_command([sys.executable, "-m", "mpibench", "bench", "--launches", "3", "--sizes", "inf",
                       "--out", str(tmp_path / "o")], timeout=120, cwd=tmp_path)
    assert job.returncode == 2 and "size" in job.stderr and "launch 2/3" not in job.stdout, job.text
    assert len(job.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_force_replaces_an_earlier_runs_launch_folders(tmp_path):
    for name in ("launch-01", "launch-02", "launch-notes"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "bench.csv").write_text("x\n")
    (tmp_path / "keep.txt").write_text("mine")
    clear_launches(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt", "launch-notes"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_sizes_own_launch_states_show_where_the_fingerprint_sees_one(tmp_path, seed):
    """The fingerprint puts every launch in one state, but blocking's own time at the size falls
    in two, and ring's ratio with it (0.8x in the fast launches, 1.0x in the slow ones)."""
    rng = np.random.default_rng(seed)
    kinds = ["fast", "slow", "fast", "slow", "fast", "slow"]
    folders = []
    for i, kind in enumerate(kinds, start=1):
        folder = tmp_path / f"launch-{i:02d}"
        ratio = (0.8 if kind == "fast" else 1.0) * np.exp(rng.normal(0, 0.01))
        _launch_folder(folder, rng, kind, ratio, 1.0)
        prints = pd.read_csv(folder / "fingerprint.csv")
        prints["pingpong_1mib_s"] = 170e-6 * np.exp(rng.normal(0, 0.01))  # one state by the fingerprint
        prints.to_csv(folder / "fingerprint.csv", index=False)
        folders.append(str(folder))
    rows, prints = read_launches(folders)
    state_of = states(prints)
    assert set(state_of.values()) == {"one"}
    ring = combine(rows, state_of, BENCH_COLUMNS).query("strategy == 'ring'").iloc[0]
    assert ring.by_state.startswith("one ") and ring.by_state.endswith("(6)")
    parts = dict(part.split(" ", 1) for part in ring.by_size_state.split(", "))
    assert set(parts) == {"fast", "slow"}, ring.by_size_state
    assert parts["fast"].startswith("0.8") and parts["slow"].startswith(("1.0", "0.9")), ring.by_size_state
    assert parts["fast"].endswith("(3)") and parts["slow"].endswith("(3)")
