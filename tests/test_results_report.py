"""report.html from hand-made output folders: every section, missing files, escaping, the CLI."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from mpibench.records import BENCH_COLUMNS, FAULT_COLUMNS, INVARIANT_COLUMNS, STEP_COLUMNS, SWEEP_COLUMNS
from mpibench.results import report
from mpibench.results.calibration import Calibration
from mpibench.results.scaling import SCALING_COLUMNS

from mpirun import run_cli

INVARIANTS = ["equivalence", "replicas", "accounting", "membership", "data", "coverage"]


def calibration(**over) -> Calibration:
    values = dict(alpha_s=5e-6, beta_s_per_byte=1e-10, gamma_cache_s_per_byte=3e-11,
                  gamma_memory_s_per_byte=1e-10, compute_fixed_s=7e-5, compute_per_sample_s=2e-6,
                  cores=2, ranks_on_host=4, ranks=4, call_overhead_s=3e-6, alpha_step_s=4e-5,
                  beta_step_s_per_byte=3e-10, loop_overhead_s=2e-5, how={"alpha_s": "ping-pong <fit>"})
    values.update(over)
    return Calibration(**values)


def _steps(scenario: str, strategy: str, n: int, death_at: int | None) -> list[dict]:
    rows = []
    for step in range(n):
        members = "0 1 2" if death_at is not None and step >= death_at else "0 1 2 3"
        batch = (48 if death_at is not None and step >= death_at else 64) - (8 if step % 5 == 4 else 0)
        rows.append({"scenario": scenario, "strategy": strategy, "recovery": "shrink", "step": step,
                     "epoch": step // 5, "members": members, "contributing": members, "excluded": "",
                     "effective_batch": batch, "epoch_ends": "", "loss_mean": 1.4 - 0.05 * step,
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
        + _steps("kill-mid-ring", "ring", 12, 6) + _steps("kill-mid-ring", "ps", 12, 6)
    pd.DataFrame(steps, columns=STEP_COLUMNS).to_csv(out / "steps.csv", index=False)
    inv = _invariants("none", "ring", 12, None) + _invariants("none", "ps", 12, (3, "replicas", "unknown")) \
        + _invariants("kill-mid-ring", "ring", 12, (7, "equivalence", "false")) \
        + _invariants("kill-mid-ring", "ps", 12, None)
    pd.DataFrame(inv, columns=INVARIANT_COLUMNS).to_csv(out / "invariants.csv", index=False)
    faults = [{"scenario": "kill-mid-ring", "strategy": s, "step": 6, "phase": "mid_reduction", "rank": 3,
               "kind": "kill", "detail": "SIGKILL after 2 messages"} for s in ("ring", "ps")]
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
        from mpibench.results.scaling import add_speedups
        pd.DataFrame(add_speedups(rows), columns=SCALING_COLUMNS).to_csv(out / "scaling.csv", index=False)
    info = {"schema_version": 1, "seed": 0, "ranks": 4, "hosts": ["node1"], "cores_on_this_host": 2,
            "config": {"strategy": "native", "scenario": "none", "steps": 12, "seed": 0},
            "mpi": {"library": "Open MPI v5\u0000"}, "ulfm": {"active": True},
            "calibration": calibration().as_dict(), "model_options": {"bucket_bytes": 1 << 20, "ps_shards": 0}}
    (out / "run.json").write_text(json.dumps(info))
    return out


def sections(page: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", page)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    """One full report, built once for the tests that only read it (charts are slow)."""
    out = write_run_dir(tmp_path_factory.mktemp("full") / "run")
    return Path(report.build(str(out))).read_text()


def test_full_report_has_every_section_and_chart(page):
    assert [s.split(". ", 1)[1] for s in sections(page)] == [
        "The property", "The six invariants", "Fault scenarios", "Sweep",
        "Benchmarks: measured and modelled", "Deliberately not violations", "Findings"]
    assert page.count('src="data:image/png;base64,') == 4  # two scenarios, scaling, bench
    assert 'class="missing"' not in page
    # self-contained: no external resource of any kind, no script
    assert not re.search(r'(src|href)="(?!data:)', page)
    assert "<script" not in page


def test_comparison_is_rebuilt_from_the_measurements_when_missing(page):
    assert "Measured against modelled" in page and "No comparison.csv" not in page
    # the measured p=4 point is 3x off on 4 ranks and 2 cores: flagged with that cause
    assert "more ranks than cores: 4 ranks time-share 2 cores" in page


def test_findings_name_every_defect(page):
    findings = page.split("<h2>7. Findings</h2>")[1]
    assert "violation: invariant <strong>equivalence</strong> under kill-mid-ring/ring" in findings
    assert "first at step 7" in findings and "replay <code>" in findings
    assert "unknown verdict: invariant <strong>replicas</strong> under none/ps" in findings
    assert "sweep case 1: 2 violation(s)" in findings
    assert "sweep case 2 ended as <strong>hang</strong>" in findings
    assert "model disagreement" in findings


def test_invariant_table_counts_checks_and_violations(page):
    table = page.split("<h2>2.")[1].split("<h2>3.")[0]
    assert '<td class="bad">12 / 1</td>' in table  # equivalence under kill-mid-ring/ring
    assert '<td class="unknown">12 / 1 (1 unknown)</td>' in table
    assert table.count('<td class="ok">12 / 0</td>') == 4 * 6 - 2


def test_text_from_the_csvs_is_escaped(page):
    assert "<b>3.2x</b>" not in page and "&lt;b&gt;3.2x&lt;/b&gt;" in page
    assert "\x00" not in page and "Open MPI v5<" in page  # the NUL ending the MPI version is dropped


def test_model_summary_splits_points_by_cores(page):
    summary = page.split("<th>where</th>")[1].split("</table>")[0]
    assert "p ≤ cores (assumptions hold)" in summary and "p &gt; cores (ranks share cores)" in summary


def test_assumptions_are_printed_with_the_modelled_figures(page):
    from mpibench.results.costmodel import ASSUMPTIONS

    bench = page.split("<h2>5.")[1].split("<h2>6.")[0]
    assert all(html_escape(a) in bench for a in ASSUMPTIONS)


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


@pytest.mark.parametrize("absent", ["steps.csv", "run.json"])
def test_a_missing_file_is_reported_as_missing(tmp_path, absent):
    out = write_run_dir(tmp_path / "run", with_bench=False, with_scaling=False)
    (out / absent).unlink()
    page = Path(report.build(str(out))).read_text()
    assert f"No {absent}" in page or (absent == "run.json" and "No calibration in run.json" in page)
    assert "No bench.csv" in page and "No scaling.csv" in page


def test_empty_folder_still_gives_a_report(tmp_path):
    page = Path(report.build(str(tmp_path))).read_text()
    for name in ("invariants.csv", "steps.csv", "faults.csv", "sweep.csv", "bench.csv", "scaling.csv",
                 "comparison.csv", "calibration in run.json"):
        assert f"No {name}" in page
    assert "<h2>7. Findings</h2><p>None in the files present; but no invariant was checked" in page


def test_cli_report_rebuilds_and_rejects_a_missing_folder(tmp_path):
    (tmp_path / "run").mkdir()
    job = run_cli(["report", str(tmp_path / "run")])
    assert job.returncode == 0, job.text
    assert "mpibench correctness report" in (tmp_path / "run" / "report.html").read_text()
    bad = run_cli(["report", str(tmp_path / "nope")])
    assert bad.returncode == 2 and "no such folder" in bad.stderr and "Traceback" not in bad.text
