"""Output folders: a fresh folder per run, a latest link, refusal of a folder holding results,
--force replacing only results; and, under mpirun, two default runs in a row kept apart and a
refused run leaving the previous folder byte-identical."""
from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mpibench.job.outdir import OutDirError, OutRequest, fresh_name, resolve, results_in
from mpirun import mpirun_command, run_command
from test_bad_input import snapshot

RUN_FILES = {"run.json", "steps.csv", "invariants.csv", "faults.csv"}


def test_fresh_name_says_when_what_and_which_seed():
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert fresh_name("kill-mid-reduction", 7, when) == "20260102T030405Z-kill-mid-reduction-seed7"
    assert fresh_name("/tmp/my schedule.toml", 0, when) == "20260102T030405Z-my-schedule-seed0"


def test_fresh_folders_never_collide_and_latest_follows(tmp_path):
    parent = tmp_path / "mpibench-out"
    paths = [resolve(OutRequest(None, False, "main", 3, parent=str(parent))) for _ in range(3)]
    assert len(set(paths)) == 3 and all(Path(p).is_dir() for p in paths)
    assert os.readlink(parent / "latest") == os.path.basename(paths[-1])


def test_a_folder_holding_results_is_refused_and_left_alone(tmp_path):
    (tmp_path / "steps.csv").write_text("x\n")
    (tmp_path / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)
    with pytest.raises(OutDirError, match="already holds results .*--force"):
        resolve(OutRequest(str(tmp_path), False, "run", 0))
    assert snapshot(tmp_path) == before


def test_force_replaces_results_and_nothing_else(tmp_path):
    for name in ("steps.csv", "bench.csv", "report.html"):
        (tmp_path / name).write_text("old\n")
    (tmp_path / "history").mkdir()
    (tmp_path / "notes.txt").write_text("mine\n")
    assert resolve(OutRequest(str(tmp_path), True, "run", 0)) == str(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_a_parent_of_runs_counts_as_holding_results(tmp_path):
    resolve(OutRequest(None, False, "run", 0, parent=str(tmp_path)))
    assert results_in(str(tmp_path)) == ["latest"]
    with pytest.raises(OutDirError):
        OutRequest(str(tmp_path), False, "run", 0).check()


@pytest.mark.parametrize("target,needle", [("file", "is a file"), ("file/sub", "is not a folder")])
def test_unusable_paths_are_refused_before_anything_is_made(tmp_path, target, needle):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutDirError, match=needle):
        resolve(OutRequest(str(tmp_path / target), False, "run", 0))


def launch(cwd: Path, args: list[str], mpirun=None) -> object:
    cmd = [*(mpirun or mpirun_command()), "-n", "2", sys.executable, "-m", "mpibench", *args]
    return run_command(cmd, timeout=120, cwd=cwd)


@pytest.mark.mpi
def test_two_default_runs_leave_two_complete_folders_and_a_refused_run_changes_nothing(tmp_path):
    first = launch(tmp_path, ["run", "--steps", "3", "--strategy", "ring"])
    second = launch(tmp_path, ["run", "--steps", "3", "--strategy", "ring"])
    assert first.returncode == 0 and second.returncode == 0, first.text + second.text
    runs = sorted(p for p in (tmp_path / "mpibench-out").iterdir() if not p.is_symlink())
    assert len(runs) == 2, runs
    for folder in runs:
        assert RUN_FILES <= set(os.listdir(folder)), os.listdir(folder)
        assert len((folder / "steps.csv").read_text().splitlines()) == 1 + 3
    assert os.readlink(tmp_path / "mpibench-out" / "latest") == runs[-1].name
    assert f"-> mpibench-out/{runs[0].name}" in first.stdout
    # refused: a folder that holds results, without --force; bad input with --force:
    # each leaves every byte where it was
    before = snapshot(tmp_path)
    for args in (["run", "--out", str(runs[0])], ["run", "--out", str(runs[0]), "--force", "--seed", "-1"]):
        job = launch(tmp_path, args)
        assert job.returncode == 2 and "Traceback" not in job.text, job.text
        assert snapshot(tmp_path) == before, args
    # a kill scenario without ULFM is not bad input: its own folder records the case as not
    # run (exit 4), and the earlier folders stay as they were
    no_ulfm = [c for c in mpirun_command() if c not in ("--with-ft", "ulfm")]
    job = launch(tmp_path, ["run", "--out", str(tmp_path / "partial"), "--scenario", "kill-before-compute"], no_ulfm)
    assert job.returncode == 4 and "Traceback" not in job.text, job.text
    assert (tmp_path / "partial" / "phases" / "000-kill-before-compute-native-shrink.json").exists()
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if "partial" not in str(k)} == before


@pytest.mark.mpi
def test_the_main_job_gets_its_own_folder_and_its_config_says_what_it_ran(tmp_path):
    import json

    mpirun = mpirun_command() + ["-x", "MPIBENCH_NO_BENCH", "-x", "MPIBENCH_SCENARIOS", "-x", "MPIBENCH_NO_SWEEP"]
    os.environ.update(MPIBENCH_NO_BENCH="1", MPIBENCH_SCENARIOS="none", MPIBENCH_NO_SWEEP="1")
    try:
        job = launch(tmp_path, ["--steps", "3", "--seed", "5"], mpirun)
    finally:
        del os.environ["MPIBENCH_NO_BENCH"], os.environ["MPIBENCH_SCENARIOS"], os.environ["MPIBENCH_NO_SWEEP"]
    assert job.returncode == 0, job.text
    (folder,) = [p for p in (tmp_path / "mpibench-out").iterdir() if not p.is_symlink()]
    assert folder.name.endswith("-main-seed5")
    config = json.loads((folder / "run.json").read_text())["config"]
    assert config["job"] == "main" and config["strategy"] == ["ring", "ps", "auto"] and config["scenario"] == ["none"]


@pytest.mark.mpi
def test_bench_without_out_gets_a_fresh_folder_too(tmp_path):
    args = ["bench", "--sizes", "4K", "--strategies", "native", "--iterations", "1", "--warmup", "0"]
    job = launch(tmp_path, args)
    assert job.returncode == 0, job.text
    (folder,) = [p for p in (tmp_path / "mpibench-out").iterdir() if not p.is_symlink()]
    assert folder.name.endswith("-bench-seed0") and (folder / "bench.csv").exists()
