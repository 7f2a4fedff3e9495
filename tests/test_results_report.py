"""report.html from hand-made output folders: the verdict and matrix, the scenario charts' marks,
the sweep, the findings, number formatting, missing and broken inputs, the CLI."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from mpibench.base.records import BENCH_COLUMNS, FAULT_COLUMNS, INVARIANT_COLUMNS, STEP_COLUMNS, SWEEP_COLUMNS
from mpibench.results import report
from mpibench.results.calibration import Calibration
from mpibench.job.scaling import SCALING_COLUMNS

from mpirun import run_cli

INVARIANTS = ["equivalence", "replicas", "accounting", "membership", "data", "coverage"]


def calibration(**over) -> Calibration:
    values = dict(alpha_s=5e-6, beta_s_per_byte=1e-10, gamma_cache_s_per_byte=3e-11,
                  gamma_memory_s_per_byte=1e-10, compute_fixed_s=7e-5, compute_per_sample_s=2e-6,
                  cores=2, ranks_on_host=4, ranks=4, call_overhead_s=3e-6, alpha_step_s=4e-5,
                  beta_step_s_per_byte=3e-10, loop_overhead_s=2e-5, how={"alpha_s": "ping-pong <fit>"})
    values.update(over)
    return Calibration(**values)


def _steps(scenario: str, strategy: str, n: int, death_at: int | None, outage=()) -> list[dict]:
    rows = []
    for step in range(n):
        if step in outage:
            continue  # nothing committed
        members = "0 1 2" if death_at is not None and step >= death_at else "0 1 2 3"
        batch = (48 if death_at is not None and step >= death_at else 64) - (8 if step % 5 == 4 else 0)
        rows.append({"scenario": scenario, "strategy": strategy, "recovery": "shrink", "step": step,
                     "epoch": step // 5, "members": members, "contributing": members, "excluded": "",
                     "effective_batch": batch, "epoch_ends": "2" if step % 5 == 4 else "",
                     "loss_mean": 1.4 - 0.05 * step,
                     "loss_var": 0.1, "step_time_s": 0.002, "sync_time_s": 0.001, "check_time_s": 0.001})
    return rows


def _invariants(scenario: str, strategy: str, n: int, bad: tuple | None) -> list[dict]:
    rows = []
    for step in range(n):
        for name in INVARIANTS:
            failed = bad is not None and (step, name) == bad[:2]
            rows.append({"scenario": scenario, "strategy": strategy, "step": step, "invariant": name,
                         "passed": bad[2] if failed else "true",
                         "detail": "worst element <b>3.2x</b> tolerance" if failed else "ok"})
    return rows


def write_run_dir(out: Path, *, with_sweep=True, with_bench=True, with_scaling=True) -> Path:
    """A complete output folder: a kill scenario, a violation, an unknown verdict, flags."""
    out.mkdir(parents=True, exist_ok=True)
    steps = _steps("none", "ring", 12, None) + _steps("none", "ps", 12, None) \
        + _steps("kill-mid-ring", "ring", 12, 6) + _steps("kill-mid-ring", "ps", 12, 6) \
        + _steps("split-brain", "ring", 12, None, outage=(1, 2)) + _steps("split-brain", "ps", 12, None, outage=(1, 2))
    pd.DataFrame(steps, columns=STEP_COLUMNS).to_csv(out / "steps.csv", index=False)
    inv = _invariants("none", "ring", 12, None) + _invariants("none", "ps", 12, (3, "replicas", "unknown")) \
        + _invariants("kill-mid-ring", "ring", 12, (7, "equivalence", "false")) \
        + _invariants("kill-mid-ring", "ps", 12, None) \
        + [r for r in _invariants("split-brain", "ring", 12, None) + _invariants("split-brain", "ps", 12, None)
           if r["step"] not in (1, 2)]
    pd.DataFrame(inv, columns=INVARIANT_COLUMNS).to_csv(out / "invariants.csv", index=False)
    faults = [{"scenario": "kill-mid-ring", "strategy": s, "step": 6, "phase": "mid_reduction", "rank": 3,
               "kind": "kill", "detail": "SIGKILL after 2 messages"} for s in ("ring", "ps")] \
        + [{"scenario": "split-brain", "strategy": s, "step": 1, "phase": "", "rank": "2 3", "kind": "partition",
            "detail": "cut"} for s in ("ring", "ps")]
    pd.DataFrame(faults, columns=FAULT_COLUMNS).to_csv(out / "faults.csv", index=False)
    if with_sweep:
        sweep = [{"case": 0, "seed": 1, "workers": 3, "strategy": "ring", "recovery": "shrink", "faults": "kill@2",
                  "steps": 8, "checks": 48, "violations": 0, "first_violation": "", "replay": "mpirun -n 3 x"},
                 {"case": 1, "seed": 2, "workers": 5, "strategy": "ps", "recovery": "shrink", "faults": "delay@1",
                  "steps": 8, "checks": 48, "violations": 2, "first_violation": "step 3 membership",
                  "replay": "mpirun -n 5 python -m mpibench run --seed 2"}]
        pd.DataFrame(sweep, columns=SWEEP_COLUMNS).to_csv(out / "sweep.csv", index=False)
        pd.DataFrame([{"case": 2, "outcome": "hang", "first_violation": "", "exit_status": "",
                       "stderr_tail": "no answer within 30 s", "replay": "mpirun -n 2 python -m mpibench run --seed 3"}]
                     ).to_csv(out / "findings.csv", index=False)
    if with_bench:
        bench = []
        for strategy in ("ring", "ps", "native"):
            for nbytes in (4096, 1 << 20):
                for tag, t in (("measured", 2e-4), ("modelled", 1e-4)):
                    bench.append({"strategy": strategy, "ranks": 4, "bytes": nbytes, "iterations": 20 if tag == "measured" else "",
                                  "time_min_s": t, "time_avg_s": t, "time_max_s": t, "algbw_gbps": nbytes / t / 1e9,
                                  "busbw_gbps": nbytes / t / 1e9 * 1.5, "errors": 0 if tag == "measured" else "",
                                  "tag": tag})
        pd.DataFrame(bench, columns=BENCH_COLUMNS).to_csv(out / "bench.csv", index=False)
    if with_scaling:
        rows = []
        for tag, base in (("measured", 2e-3), ("modelled", 1.8e-3)):
            for mode in ("strong", "weak"):
                for p in (1, 2, 4):
                    t = base / p if mode == "strong" else base * (1 + 0.1 * p)
                    t = t * (3 if tag == "measured" and p == 4 else 1)
                    rows.append({"strategy": "ring", "mode": mode, "ranks": p, "local_batch": 128 if mode == "weak" else 1024 // p,
                                 "global_batch": 1024 if mode == "strong" else 128 * p, "bytes": 76844,
                                 "steps": 16 if tag == "measured" else "", "step_time_s": t,
                                 "step_time_p90_s": t * 1.1 if tag == "measured" else "", "sync_time_s": t / 4,
                                 "speedup": None, "efficiency": None, "other_load_cores": 0.1 if tag == "measured" else "",
                                 "violations": 0 if tag == "measured" else "", "tag": tag, "assumptions": ""})
        from mpibench.job.scaling import add_speedups
        pd.DataFrame(add_speedups(rows), columns=SCALING_COLUMNS).to_csv(out / "scaling.csv", index=False)
    info = {"schema_version": 1, "seed": 0, "ranks": 4, "hosts": ["node1"], "cores_on_this_host": 2,
            "config": {"job": "main", "strategy": ["ring", "ps"], "scenario": ["none", "kill-mid-ring", "split-brain"],
                       "steps": 12, "seed": 0},
            "plan": [f"{sc}/{st}" for sc in ("none", "kill-mid-ring", "split-brain") for st in ("ring", "ps")],
            "mpi": {"library": "Open MPI v5\u0000"}, "ulfm": {"active": True},
            "calibration": calibration().as_dict(), "model_options": {"bucket_bytes": 1 << 20, "ps_shards": 0}}
    (out / "run.json").write_text(json.dumps(info))
    return out


def sections(page: str) -> list[str]:
    return re.findall(r"<h2[^>]*>(.*?)</h2>", page)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    """One full report, built once for the tests that only read it (charts are slow)."""
    out = write_run_dir(tmp_path_factory.mktemp("full") / "run")
    return Path(report.build(str(out))).read_text()


def panel(page: str, scenario: str) -> str:
    return page.split(f'<div class="panel" id="sc-{scenario}">')[1].split('<div class="panel"')[0]


def test_full_report_has_every_section_and_is_self_contained(page):
    assert sections(page) == ["Fault scenarios", "Randomized sweep", "Findings",
                              "Benchmarks: measured and modelled", "What is checked"]
    assert page.count('src="data:image/png;base64,') == 2  # scaling, bench; scenarios are inline SVG
    assert page.count('<svg class="scenario-chart"') == 3
    assert not re.search(r'(src|href)="(?!data:|#)', page)
    assert "<script" not in page


def test_banner_comes_first_with_the_verdict_counts_and_first_violation(page):
    body = page.split("<body>")[1]
    assert body.index('id="verdict"') < body.index('id="matrix"') < body.index("<h2")
    banner = body.split('id="verdict"')[1].split('id="matrix"')[0]
    assert 'data-verdict="fail"' in banner and ">FAIL<" in banner
    checks = 12 * 6 * 4 + 10 * 6 * 2
    assert f"{checks:,} checks over 6 case(s): 2 violated, in 1 case(s)" in banner
    assert "<strong>equivalence</strong> at step 7 of kill-mid-ring under ring (shrink)" in banner
    assert "replay: <code>" in banner and "--scenario kill-mid-ring" in banner and "--strategy ring" in banner


def test_matrix_is_in_plan_order_coloured_and_linked(page):
    matrix = page.split('id="matrix"')[1].split("</table>")[0]
    rows = re.findall(r'<th class="row"><a href="#sc-([^"]+)">', matrix)
    assert rows == ["none", "kill-mid-ring", "split-brain"]  # plan order, not alphabetical
    assert re.findall(r"<th>(ring|ps)</th>", matrix) == ["ring", "ps"]
    cells = re.findall(r'<td class="cell (\w+)"[^>]*><a href="#sc-([^"]+)">', matrix)
    assert cells == [("pass", "none"), ("unknown", "none"), ("fail", "kill-mid-ring"), ("pass", "kill-mid-ring"),
                     ("pass", "split-brain"), ("pass", "split-brain")]
    for scenario in rows:
        assert f'id="sc-{scenario}"' in page


def test_scenario_charts_carry_baseline_epochs_faults_and_outages(page):
    kill, split, none = panel(page, "kill-mid-ring"), panel(page, "split-brain"), panel(page, "none")
    assert 'class="baseline"' in kill and 'class="baseline"' not in none  # no baseline for the baseline
    assert 'class="fault fault-kill" data-step="6"' in kill
    assert 'class="fault fault-partition" data-step="1"' in split
    assert kill.count('class="epoch-end"') == 2  # steps 4 and 9 end worker 2's epoch
    assert '<rect class="outage" data-steps="1-2" data-series="all"' in split and "outage" not in kill
    # the loss line is broken at the outage (two sub-paths), never bridged
    loss = re.search(r'<path class="series loss" data-series="ring"[^>]* d="([^"]+)"', split).group(1)
    assert loss.count("M") == 2


def test_ring_and_ps_coincide_is_stated(page):
    assert "ring and ps coincide: same committed steps and effective batches" in panel(page, "none")
    assert "final loss 0.85 vs 0.85 without faults" in panel(page, "kill-mid-ring")


def test_sweep_and_findings_are_grouped(page):
    sweep = page.split("<h2 id='sweep'>")[1].split("<h2")[0]
    assert "2 cases, 1 not clean." in sweep and "mpirun -n 5 python -m mpibench run --seed 2" in sweep
    findings = page.split("<h2 id='findings'>")[1].split("<h2")[0]
    assert "<strong>equivalence</strong> violated in 1 case(s) (kill-mid-ring/ring)" in findings
    assert "<strong>replicas</strong> gave no verdict in 1 case(s) (none/ps)" in findings
    assert "sweep: 1 case(s) ended as <strong>violation</strong>, first 1" in findings
    assert findings.count("model disagreements") == 1  # one item, grouped by cause, not one per point


def test_the_page_shows_this_runs_findings_and_reads_no_source_tree_ledger(page):
    # The ledger of known defects belongs to the lab (lab/FINDINGS.toml) and is not shipped.
    findings = page.split("<h2 id='findings'>")[1].split("<h2")[0]
    assert "This run" in findings
    assert "FINDINGS.toml" not in page and "Known defects" not in page


def test_numbers_are_written_as_people_write_them(page):
    from mpibench.results.htmlparts import num

    assert [num(v) for v in (1024, 1024.0, 0.012345, 1234.5, 3.2e-5, 0.5)] == \
        ["1024", "1024", "0.0123", "1234", "3.2e-05", "0.5"]
    text = re.sub(r"data:image/[A-Za-z]+;base64,[A-Za-z0-9+/=]+", "", page)  # a chart's bytes are not numbers
    assert "e+0" not in text.split("<h2 id='bench'>")[1].split("<details>")[0]


def test_within_only_where_the_printed_error_is_within(page):
    table = page.split("Measured against modelled")[1].split("</table>")[0]
    for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        error = float(cells[8].rstrip("%")) / 100
        assert ("within" in cells[9]) == (abs(error) <= 0.25), cells


def test_assumptions_are_printed_once(page):
    from mpibench.results.costmodel import ASSUMPTIONS

    assert all(page.count(html_escape(a)) == 1 for a in ASSUMPTIONS)


def test_text_from_the_csvs_is_escaped(page):
    assert "<b>3.2x</b>" not in page and "&lt;b&gt;3.2x&lt;/b&gt;" in page
    assert "\x00" not in page and "Open MPI v5" in page  # the NUL ending the MPI version is dropped


def test_comparison_is_rebuilt_from_the_measurements_when_missing(page):
    assert "Measured against modelled" in page and "No comparison.csv" not in page
    assert "oversubscribed" in page.split("Measured against modelled")[1]


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


def test_verdict_json_is_preferred_to_the_csvs(tmp_path):
    out = write_run_dir(tmp_path / "run", with_bench=False, with_scaling=False, with_sweep=False)
    first = {"scenario": "none", "strategy": "ps", "recovery": "respawn", "step": 3, "invariant": "membership",
             "detail": "rank 2 left out", "replay": "mpirun -n 4 python -m mpibench run --scenario none"}
    verdict = {"schema": 1, "verdict": "fail", "reason": "rebuilt from history", "checks": 10, "violations": 1,
               "first_violation": first,
               "cases": [{**{k: first[k] for k in ("scenario", "strategy", "recovery")}, "verdict": "fail",
                          "steps": 12, "checks": 10, "violations": 1, "first_violation": first,
                          "replay": first["replay"]},
                         {"scenario": "kill-mid-ring", "strategy": "ps", "recovery": "respawn", "verdict": "unknown",
                          "reason": "worker 2's history ends early", "steps": 3, "checks": 0, "violations": 0,
                          "first_violation": None, "replay": ""}]}
    (out / "verdict.json").write_text(json.dumps(verdict))
    page = Path(report.build(str(out))).read_text()
    banner = page.split('id="verdict"')[1].split('id="matrix"')[0]
    assert "10 checks over 2 case(s): 1 violated" in banner and "<strong>membership</strong> at step 3" in banner
    matrix = page.split('id="matrix"')[1].split("</table>")[0]
    assert "from verdict.json" in banner and "respawn" in matrix
    assert 'class="cell unknown" title="kill-mid-ring / ps / respawn: unknown' in matrix
    assert "worker 2&#x27;s history ends early" in matrix


def test_a_pass_and_an_unknown_banner(tmp_path):
    out = write_run_dir(tmp_path / "run", with_bench=False, with_scaling=False, with_sweep=False)
    inv = pd.read_csv(out / "invariants.csv", keep_default_na=False)
    inv.assign(passed="true").to_csv(out / "invariants.csv", index=False)
    page = Path(report.build(str(out))).read_text()
    assert 'data-verdict="pass"' in page and "Every invariant held" in page
    (out / "invariants.csv").unlink()
    page = Path(report.build(str(out))).read_text()
    assert 'data-verdict="unknown"' in page and "no invariant was checked" in page


def test_a_folder_whose_files_disagree_says_so(tmp_path):
    out = write_run_dir(tmp_path / "run", with_bench=False, with_scaling=False, with_sweep=False)
    info = json.loads((out / "run.json").read_text())
    info["plan"] = ["none/ring", "none/ps"]
    info["ranks"] = 2
    (out / "run.json").write_text(json.dumps(info))
    page = Path(report.build(str(out))).read_text()
    assert page.count('class="warning"') == 2
    assert "run.json&#x27;s plan does not name" in page and "4 members in a step but run.json says 2 ranks" in page


@pytest.mark.parametrize("absent", ["steps.csv", "run.json"])
def test_a_missing_file_is_reported_as_missing(tmp_path, absent):
    out = write_run_dir(tmp_path / "run", with_bench=False, with_scaling=False, with_sweep=False)
    (out / absent).unlink()
    page = Path(report.build(str(out))).read_text()
    assert f"No {absent}" in page or (absent == "run.json" and "No calibration in run.json" in page)
    assert "No bench.csv" in page and "No scaling.csv" in page
    assert "No sweep ran for this folder" in page


def test_an_empty_folder_is_an_input_error(tmp_path):
    from mpibench.results.inputs import ReportInputError

    with pytest.raises(ReportInputError, match="holds no mpibench results"):
        report.build(str(tmp_path))
    assert not (tmp_path / "report.html").exists()


def test_cli_report_rebuilds_with_progress_and_rejects_bad_folders(tmp_path):
    out = write_run_dir(tmp_path / "run", with_bench=False, with_scaling=False)
    job = run_cli(["report", str(out)])
    assert job.returncode == 0, job.text
    assert "mpibench correctness report" in (out / "report.html").read_text()
    assert "report: read steps.csv" in job.stderr and "bytes in" in job.stderr
    for folder in (tmp_path / "nope", tmp_path / "empty"):
        if folder.name == "empty":
            folder.mkdir()
        bad = run_cli(["report", str(folder)])
        assert bad.returncode == 2 and "Traceback" not in bad.text, bad.text
        assert len(bad.stderr.strip().splitlines()) == 1
