"""Reading histories and the ``check`` command: what cannot be judged is unknown (exit 3),
never a pass; a stored run is judged again byte for byte."""
import json
import subprocess
import sys

import pytest

from history_builder import Sim, build, find
from mpibench.check import check_run

CASE = "history/000-synthetic-ring-shrink"


def check(folder) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpibench", "check", str(folder)], capture_output=True,
                          text=True, timeout=120)


def test_pass_exit_0_and_outputs_reproduced_byte_for_byte(tmp_path):
    build(tmp_path, Sim(kills=[(1, 2)]))
    first = check(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.startswith("verdict: pass")
    saved = {n: (tmp_path / n).read_bytes() for n in ("verdict.json", "invariants.csv")}
    again = check(tmp_path)
    assert again.returncode == 0
    assert {n: (tmp_path / n).read_bytes() for n in saved} == saved
    header = saved["invariants.csv"].decode().splitlines()[0]
    assert header == "scenario,strategy,recovery,step,invariant,passed,detail"
    doc = json.loads(saved["verdict.json"])
    assert doc["schema"] == 1 and doc["verdict"] == "pass" and doc["cases"][0]["steps"] == 6


def test_violation_exit_1_names_step_invariant_and_replay(tmp_path):
    build(tmp_path, tamper=lambda files, info: find(files, 2, 3).update(params_after="0" * 32))
    done = check(tmp_path)
    assert done.returncode == 1
    assert "step 3 invariant 'replicas'" in done.stdout and "replay: mpirun" in done.stdout
    doc = json.loads((tmp_path / "verdict.json").read_text())
    assert doc["verdict"] == "fail" and doc["first_violation"]["step"] == 3


def test_a_deleted_worker_file_makes_check_exit_3_naming_it(tmp_path):
    build(tmp_path)
    (tmp_path / CASE / "worker-1.jsonl").unlink()
    done = check(tmp_path)
    assert done.returncode == 3
    assert "worker-1.jsonl missing" in done.stdout
    assert json.loads((tmp_path / "verdict.json").read_text())["verdict"] == "unknown"


def test_a_file_that_stops_without_a_kill_cannot_be_judged(tmp_path):
    def cut(files, info):
        files["worker-2.jsonl"] = files["worker-2.jsonl"][:-5]
    build(tmp_path, tamper=cut)
    verdict = check_run(str(tmp_path))
    assert verdict.verdict == "unknown" and "worker-2.jsonl stops at step" in verdict.reason


def test_a_killed_workers_half_written_last_line_is_tolerated(tmp_path):
    build(tmp_path, Sim(kills=[(2, 3)]))
    path = tmp_path / CASE / "worker-2.jsonl"
    path.write_text(path.read_text() + '{"kind": "attempt", "step": 3, "att')
    assert check_run(str(tmp_path)).verdict == "pass"


def test_a_broken_line_inside_a_file_cannot_be_judged(tmp_path):
    build(tmp_path)
    path = tmp_path / CASE / "worker-0.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = lines[3][:20]
    path.write_text("\n".join(lines) + "\n")
    verdict = check_run(str(tmp_path))
    assert verdict.verdict == "unknown" and "line 4 is not JSON" in verdict.reason


def test_a_run_that_stopped_early_cannot_be_judged(tmp_path):
    def early(files, info):
        for recs in files.values():
            recs[-1]["steps"] = 4
    build(tmp_path, tamper=early)
    verdict = check_run(str(tmp_path))
    assert verdict.verdict == "unknown" and "closed after 4 of 6 steps" in verdict.reason


def test_a_missing_replacement_cannot_be_judged(tmp_path):
    def no_replacement(files, info):
        del files["worker-2.joined-0003.jsonl"]
    build(tmp_path, Sim(kills=[(2, 3)], recovery="respawn"), no_replacement)
    verdict = check_run(str(tmp_path))
    assert verdict.verdict == "unknown" and "worker-2.joined-0003.jsonl missing" in verdict.reason


@pytest.mark.parametrize("remove", ["run.json", "case.json", "history"])
def test_missing_pieces_exit_3(tmp_path, remove):
    import shutil

    build(tmp_path)
    target = {"run.json": tmp_path / "run.json", "case.json": tmp_path / CASE / "case.json",
              "history": tmp_path / "history"}[remove]
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    done = check(tmp_path)
    assert done.returncode == 3, done.stdout
    assert "cannot judge" in done.stdout and "Traceback" not in done.stderr


def test_bad_usage_exit_2_one_line(tmp_path):
    done = check(tmp_path / "no-such-folder")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no such folder" in done.stderr
    done = subprocess.run([sys.executable, "-m", "mpibench", "check"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
