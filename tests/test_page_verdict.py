"""The page's banner says what the checker said, in words: not judged yet (with the command),
a partial pass with what was not run, unknown naming the unfinished phase; a sweep folder reads
its verdict from sweep.csv."""
import json
import re
import sys

import pandas as pd
import pytest

from history_builder import build, find
from mpibench.base.plan import mark_finished, mark_not_run
from mpibench.check.command import check_command
from mpibench.results import report

CASE = "000-synthetic-ring-shrink"


def banner_text(out) -> tuple[str, str]:
    page = (out / "report.html").read_text()
    block = re.search(r'<div id="verdict".*?</div></div>', page, re.S).group(0)
    verdict = re.search(r'data-verdict="([^"]+)"', block).group(1)
    return verdict, re.sub(r"<[^>]+>", " ", block)


def plan(out, phases):
    info = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**info, "phases": phases}))


def test_a_folder_without_verdict_json_is_not_judged_yet_and_says_how_to_judge_it(tmp_path):
    build(tmp_path)
    report.build(str(tmp_path))
    verdict, text = banner_text(tmp_path)
    assert verdict == "unjudged" and "NOT JUDGED YET" in text and "UNKNOWN" not in text
    assert f"{sys.executable} -m mpibench check {tmp_path}" in text
    assert "not judged" in (tmp_path / "report.html").read_text()  # the matrix cells too


@pytest.mark.parametrize("needs", ["--with-ft ulfm", "a free slot to spawn"])
def test_a_partial_pass_names_what_was_not_run(tmp_path, needs):
    build(tmp_path)
    plan(tmp_path, [CASE, "001-kill-ring-respawn"])
    mark_finished(str(tmp_path), CASE)
    mark_not_run(str(tmp_path), "001-kill-ring-respawn", needs)
    assert check_command(str(tmp_path)) == 4
    report.build(str(tmp_path))
    verdict, text = banner_text(tmp_path)
    assert verdict == "pass" and "PARTIAL PASS" in text and f"001-kill-ring-respawn (needs {needs})" in text


def test_an_unfinished_phase_is_named_on_the_page(tmp_path):
    build(tmp_path)
    plan(tmp_path, [CASE, "sweep", "report"])
    mark_finished(str(tmp_path), CASE)
    assert check_command(str(tmp_path)) == 3
    report.build(str(tmp_path))
    verdict, text = banner_text(tmp_path)
    assert verdict == "unknown" and "never finished: sweep, report" in text


def test_a_failure_reads_fail(tmp_path):
    build(tmp_path, tamper=lambda files, info: find(files, 2, 3).update(params_after="0" * 32))
    assert check_command(str(tmp_path)) == 1
    report.build(str(tmp_path))
    assert banner_text(tmp_path)[0] == "fail"


@pytest.mark.parametrize("outcomes,expected", [(["ok", "ok"], "pass"), (["ok", "violation"], "fail"),
                                               (["ok", "hang"], "unknown"), ([], "unknown")])
def test_a_sweep_folder_reads_its_verdict_from_sweep_csv(tmp_path, outcomes, expected):
    rows = [{"case": f"s{i}", "seed": i, "workers": 2, "strategy": "ring", "recovery": "shrink", "faults": "",
             "steps": 4, "checks": 24 if o != "hang" else 0, "violations": int(o == "violation"),
             "first_violation": "", "replay": "x", "outcome": o} for i, o in enumerate(outcomes)]
    columns = ["case", "seed", "workers", "strategy", "recovery", "faults", "steps", "checks", "violations",
               "first_violation", "replay", "outcome"]
    pd.DataFrame(rows, columns=columns).to_csv(tmp_path / "sweep.csv", index=False)
    (tmp_path / "sweep.json").write_text(json.dumps({"cases": len(rows), "cases_per_launch": 12}))
    report.build(str(tmp_path))
    verdict, text = banner_text(tmp_path)
    assert verdict == expected and f"over {len(rows)} case(s)" in text
    page = (tmp_path / "report.html").read_text()
    assert "one MPI job per case" not in page and "up to 12 cases one after another in each MPI job" in page


@pytest.mark.parametrize("errors,expected", [(0, "measured"), (3, "fail")])
def test_a_folder_of_measurements_only_says_so_or_fails_on_a_wrong_sum(tmp_path, errors, expected):
    rows = [{"strategy": s, "ranks": 2, "bytes": 4096, "iterations": 4, "time_min_s": 1e-5, "time_avg_s": 1e-5,
             "time_max_s": 1e-5, "algbw_gbps": 0.4, "busbw_gbps": 0.4, "errors": errors if s == "ring" else 0,
             "tag": "measured"} for s in ("blocking", "ring")]
    pd.DataFrame(rows).to_csv(tmp_path / "bench.csv", index=False)
    (tmp_path / "run.json").write_text(json.dumps({"seed": 0, "ranks": 2}))
    report.build(str(tmp_path))
    verdict, text = banner_text(tmp_path)
    assert verdict == expected and "UNKNOWN" not in text
    assert ("wrong element" in text) == bool(errors)
