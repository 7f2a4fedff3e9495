"""A case the launch cannot support: ``not-run`` with its reason, never a pass, never a crash."""
import json
import os

import pandas as pd
import pytest

from mpibench.drive.cases import CRASH, NOT_RUN, OK, judge, not_run_needs
from mpibench.drive.launch import JobResult
from mpibench.drive.sweep import SweepPlan, SweepSettings, run_sweep
from mpibench.drive.tally import summary_text, sweep_status, tally
from test_sweep import fake_launcher

NEEDS = "process-fault tolerance (--with-ft ulfm)"


def not_run_folder(path, needs=NEEDS):
    """What a ``run`` writes when its probe leaves its one case out."""
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"cases": [], "not_run": {"kill-mid-reduction": needs}}))
    return path


def test_a_case_left_out_by_the_probe_is_not_run_with_its_reason(tmp_path):
    case = SweepPlan(1, (2,), ("ring",), 4).cases()[0]
    out = not_run_folder(tmp_path / "run")
    assert not_run_needs(out) == NEEDS
    result = judge(case, out, JobResult(4, 0.1, 10, "", ""), "replay")
    assert (result.outcome, result.first_violation) == (NOT_RUN, f"not run: needs {NEEDS}")
    # any other status, or nothing in run.json saying so, stays what it was
    assert judge(case, out, JobResult(3, 0.1, 10, "", ""), "replay").outcome == CRASH
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "run.json").write_text(json.dumps({"cases": []}))
    assert not_run_needs(plain) == "" and not_run_needs(tmp_path / "absent") == ""
    assert judge(case, plain, JobResult(4, 0.1, 10, "", ""), "replay").outcome == CRASH


@pytest.mark.parametrize("left_out", [0, 1, 4])
def test_the_sweep_tallies_not_run_apart_and_exits_4_only_when_all_else_passed(tmp_path, left_out):
    """A stand-in launcher writes the folder of a left-out case and exits 4, as the job does."""
    body = ('out=; prev=; for a in "$@"; do [ "$prev" = --out ] && out=$a; prev=$a; done\n'
            f'mkdir -p "$out"; printf \'{{"cases": [], "not_run": {{"c": "{NEEDS}"}}}}\' > "$out/run.json"\n'
            "echo 'needs process-fault tolerance' >&2; exit 4")
    cases = SweepPlan(2, (2, 3), ("ring",), 4).cases()[:left_out]
    settings = SweepSettings(tmp_path / "out", fake_launcher(tmp_path, body), jobs=2, case_deadline_s=30)
    outcomes = run_sweep(cases, settings, stream=open(os.devnull, "w"))
    assert [o.outcome for o in outcomes] == [NOT_RUN] * left_out
    counts = tally(outcomes)["outcomes"]
    assert counts[NOT_RUN] == left_out and counts[CRASH] == 0 and counts[OK] == 0
    assert sweep_status(outcomes) == (4 if left_out else 0)
    text = summary_text(outcomes, 1.0)
    assert ("not run (the launch cannot support them)" in text) == bool(left_out)
    assert "0 crashed" in text.splitlines()[0]
    if left_out:
        sweep = pd.read_csv(tmp_path / "out" / "sweep.csv", keep_default_na=False)
        assert (sweep.outcome == NOT_RUN).all() and sweep.first_violation.str.contains(NEEDS, regex=False).all()
        findings = pd.read_csv(tmp_path / "out" / "findings.csv", keep_default_na=False)
        assert findings.empty  # not run is no finding


def test_a_finding_beside_not_run_cases_still_fails_the_sweep(tmp_path):
    case = SweepPlan(1, (2,), ("ring",), 4).cases()[0]
    left_out = judge(case, not_run_folder(tmp_path / "a"), JobResult(4, 0.1, 10, "", ""), "replay")
    crashed = judge(case, tmp_path / "b", JobResult(139, 0.1, 10, "", "Signal: 11"), "replay")
    assert crashed.outcome == CRASH and sweep_status([left_out, crashed]) == 1
