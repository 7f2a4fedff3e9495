"""Findings: what this run surfaced, grouped by cause."""
from __future__ import annotations

import pandas as pd

from ..htmlparts import esc, num
from ..inputs import RunFiles
from .bench import CODE_TEXT
from .verdict import FAIL, Verdict


def run_findings(files: RunFiles, v: Verdict, comparison: pd.DataFrame | None) -> list[str]:
    """One HTML sentence per cause (not per data point)."""
    found = violations_by_invariant(v)
    silent = [c for c in v.cases if c.checks == 0]
    if silent and v.cases:
        found.append(f"{len(silent)} planned case(s) left no checks: "
                     + esc(", ".join(f"{c.scenario}/{c.strategy}" for c in silent[:6]))
                     + (" ..." if len(silent) > 6 else ""))
    found += sweep_findings(files)
    found += bench_findings(files)
    found += model_findings(comparison)
    return found


def violations_by_invariant(v: Verdict) -> list[str]:
    groups: dict[str, list] = {}
    for case in v.cases:
        if case.first is not None:
            groups.setdefault(case.first.invariant, []).append(case)
    out = []
    for invariant, cases in groups.items():
        kind = "violated" if any(c.verdict == FAIL for c in cases) else "gave no verdict"
        first = cases[0].first
        where = ", ".join(f"{c.scenario}/{c.strategy}" for c in cases[:6]) + (" ..." if len(cases) > 6 else "")
        out.append(f"<strong>{esc(invariant)}</strong> {kind} in {len(cases)} case(s) ({esc(where)}); first at "
                   f"step {esc(first.step)} of {esc(first.scenario)}/{esc(first.strategy)}: {esc(first.detail)}"
                   + (f"; replay <code>{esc(first.replay)}</code>" if first.replay else ""))
    return out


def sweep_findings(files: RunFiles) -> list[str]:
    sweep = files["sweep.csv"]
    if sweep is None or sweep.empty:
        return []
    outcome = sweep.outcome.astype(str).str.lower() if "outcome" in sweep else pd.Series("ok", index=sweep.index)
    violations = pd.to_numeric(sweep.violations, errors="coerce").fillna(0)
    outcome = outcome.where(~((outcome == "ok") & (violations > 0)), "violation")
    out = []
    for kind, part in sweep[outcome != "ok"].groupby(outcome[outcome != "ok"], sort=True):
        first = part.iloc[0]
        detail = str(first.get("first_violation", "") or "")
        replay = first.get("minimal_replay") if isinstance(first.get("minimal_replay"), str) and first.get(
            "minimal_replay") else first.get("replay", "")
        out.append(f"sweep: {len(part)} case(s) ended as <strong>{esc(kind)}</strong>, first {esc(first['case'])}"
                   + (f" ({esc(detail)})" if detail else "")
                   + (f"; replay <code>{esc(replay)}</code>" if replay else ""))
    return out


def bench_findings(files: RunFiles) -> list[str]:
    out = []
    bench, scaling = files["bench.csv"], files["scaling.csv"]
    if bench is not None and "errors" in bench:
        bad = bench[(bench.tag == "measured") & (pd.to_numeric(bench.errors, errors="coerce").fillna(0) > 0)]
        for strategy, part in bad.groupby("strategy", sort=False):
            out.append(f"benchmark: {esc(strategy)} gave wrong sums at {len(part)} size(s) "
                       f"({int(pd.to_numeric(part.errors).sum())} wrong elements in all)")
    if scaling is not None and "violations" in scaling:
        bad = scaling[(scaling.tag == "measured") & (pd.to_numeric(scaling.violations, errors="coerce").fillna(0) > 0)]
        if not bad.empty:
            out.append(f"scaling: invariants violated at {len(bad)} point(s) "
                       f"({esc(', '.join(sorted(set(bad.strategy.astype(str)))))})")
    return out


def model_findings(comparison: pd.DataFrame | None) -> list[str]:
    if comparison is None or comparison.empty or "cause_codes" not in comparison:
        return []
    measured = pd.to_numeric(comparison.measured_s, errors="coerce")
    error = (pd.to_numeric(comparison.modelled_s, errors="coerce") - measured) / measured
    tolerance = pd.to_numeric(comparison.get("tolerance", 0.25), errors="coerce").fillna(0.25)
    off = comparison[error.abs() > tolerance]
    if off.empty:
        return []
    counts: dict[str, list[float]] = {}
    for codes, err in zip(off.cause_codes.astype(str), error[off.index]):
        for code in codes.split() or ["unexplained"]:
            counts.setdefault(code, []).append(err)
    lines = [f"<code>{esc(code)}</code>: {len(errs)} figure(s), model error {num(min(errs) * 100)}% to "
             f"{num(max(errs) * 100)}% ({esc(CODE_TEXT.get(code, code))})" for code, errs in counts.items()]
    return [f"model disagreements: {len(off)} of {len(comparison)} figures outside the tolerance, by likely "
            "cause (a figure can have several):<ul>" + "".join(f"<li>{line}</li>" for line in lines) + "</ul>"]


def section(files: RunFiles, v: Verdict, comparison: pd.DataFrame | None) -> str:
    found = run_findings(files, v, comparison)
    if found:
        mine = "<ol>" + "".join(f"<li>{f}</li>" for f in found) + "</ol>"
    elif v.checks:
        mine = "<p>None: every check held and every measured figure agreed with the model within tolerance.</p>"
    else:
        mine = "<p>None in the files present; but no invariant was checked here.</p>"
    return "<h2 id='findings'>Findings</h2><div class='findings'><div><h3>This run</h3>" + mine + "</div></div>"
