"""Completeness: a run whose planned phases did not all end is never a pass; phases the launch
could not run are listed and make a partial pass (exit 4); the main job's sweep cases count."""
import json
import subprocess
import sys

import pytest

from history_builder import build, find
from mpibench.base.plan import mark_finished, mark_not_run
from mpibench.check import check_run, exit_status, verdict_line

CASE = "000-synthetic-ring-shrink"
AFTER = ["sweep", "bench", "scaling", "report"]


def planned(folder, phases):
    info = json.loads((folder / "run.json").read_text())
    info["phases"] = phases
    (folder / "run.json").write_text(json.dumps(info))


def check(folder) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpibench", "check", str(folder)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("ended", range(len(AFTER) + 2))
def test_every_phase_that_never_ended_makes_the_run_unknown_and_is_named(tmp_path, ended):
    """The run ended after ``ended`` of its phases (0: inside its one case)."""
    build(tmp_path)
    phases = [CASE, *AFTER]
    planned(tmp_path, phases)
    for phase in phases[:ended]:
        mark_finished(str(tmp_path), phase)
    done = check(tmp_path)
    doc = json.loads((tmp_path / "verdict.json").read_text())
    if ended == len(phases):
        assert done.returncode == 0 and doc["verdict"] == "pass", done.stdout
        return
    assert done.returncode == 3, done.stdout
    assert doc["verdict"] == "unknown" and doc["exit_status"] == 3
    assert doc["phases"]["unfinished"] == phases[ended:]
    first = phases[ended]
    assert (f"case {first}" if first == CASE else first) in done.stdout


def test_the_job_judging_itself_leaves_its_page_pending_not_missing(tmp_path):
    build(tmp_path)
    planned(tmp_path, [CASE, "report"])
    mark_finished(str(tmp_path), CASE)
    assert check_run(str(tmp_path), after_verdict=("report",)).verdict == "pass"
    assert check_run(str(tmp_path)).verdict == "unknown"  # afterwards, a page that never came is missing


@pytest.mark.parametrize("needs", ["--with-ft ulfm", "a free slot to spawn"])
def test_not_run_phases_are_listed_and_make_a_partial_pass(tmp_path, needs):
    build(tmp_path)
    planned(tmp_path, [CASE, "001-kill-ring-respawn", "report"])
    mark_finished(str(tmp_path), CASE)
    mark_not_run(str(tmp_path), "001-kill-ring-respawn", needs)
    mark_finished(str(tmp_path), "report")
    verdict = check_run(str(tmp_path))
    assert exit_status(verdict) == 4 and verdict.verdict == "pass"
    assert needs in verdict_line(verdict) and "partial" in verdict_line(verdict)
    done = check(tmp_path)
    assert done.returncode == 4
    doc = json.loads((tmp_path / "verdict.json").read_text())
    assert doc["phases"]["not_run"] == [{"phase": "001-kill-ring-respawn", "needs": needs}]


def test_a_violation_with_a_not_run_phase_is_still_a_failure(tmp_path):
    build(tmp_path, tamper=lambda files, info: find(files, 2, 3).update(params_after="0" * 32))
    planned(tmp_path, [CASE, "001-x", "report"])
    for phase in (CASE, "report"):
        mark_finished(str(tmp_path), phase)
    mark_not_run(str(tmp_path), "001-x", "--with-ft ulfm")
    assert check(tmp_path).returncode == 1


def test_an_unreadable_phase_record_is_unknown(tmp_path):
    build(tmp_path)
    planned(tmp_path, [CASE])
    (tmp_path / "phases").mkdir()
    (tmp_path / "phases" / f"{CASE}.json").write_text("{not json")
    done = check(tmp_path)
    assert done.returncode == 3 and "cannot be read" in done.stdout


def test_a_folder_without_planned_phases_is_judged_on_its_history(tmp_path):
    build(tmp_path)
    assert check(tmp_path).returncode == 0


@pytest.mark.parametrize("sweep_case", ["pass", "fail", "cut"])
def test_the_main_jobs_sweep_cases_are_judged_with_it(tmp_path, sweep_case):
    build(tmp_path)
    planned(tmp_path, [CASE, "sweep"])
    for phase in (CASE, "sweep"):
        mark_finished(str(tmp_path), phase)
    case_dir = tmp_path / "sweep-cases" / "s0-n3-ring-shrink" / "run"
    tamper = (lambda files, info: find(files, 2, 3).update(params_after="0" * 32)) if sweep_case == "fail" else None
    build(case_dir, tamper=tamper)
    if sweep_case == "cut":
        (case_dir / "history" / CASE / "worker-1.jsonl").unlink()
    (tmp_path / "sweep-cases" / "s1-never-ran").mkdir()  # left out by the budget: no run folder
    done = check(tmp_path)
    assert done.returncode == {"pass": 0, "fail": 1, "cut": 3}[sweep_case], done.stdout
    if sweep_case != "pass":
        assert "sweep-cases/s0-n3-ring-shrink" in done.stdout


def test_a_run_missing_only_its_page_says_how_to_build_it_and_passes_once_built(tmp_path):
    build(tmp_path)
    planned(tmp_path, [CASE, "report"])
    mark_finished(str(tmp_path), CASE)
    done = check(tmp_path)
    assert done.returncode == 3 and f"{sys.executable} -m mpibench report {tmp_path}" in done.stdout
    built = subprocess.run([sys.executable, "-m", "mpibench", "report", str(tmp_path)], capture_output=True,
                           text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    assert check(tmp_path).returncode == 0
