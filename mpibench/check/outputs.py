"""verdict.json and invariants.csv, the one-line verdict and the exit status.

Both files are a pure function of the history (no times, no paths), so
checking a run folder again rewrites them byte for byte.
"""
from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import asdict

from .completeness import is_partial
from .verdict import CaseVerdict, RunVerdict

SCHEMA = 1
COLUMNS = ["scenario", "strategy", "recovery", "step", "invariant", "passed", "detail"]
EXIT = {"pass": 0, "fail": 1, "unknown": 3}
EXIT_PARTIAL = 4  # everything that ran passed; some planned phases could not run here


def exit_status(verdict: RunVerdict) -> int:
    return EXIT_PARTIAL if is_partial(verdict) else EXIT[verdict.verdict]


def _violation(v) -> dict | None:
    return None if v is None else asdict(v)


def _case(c: CaseVerdict) -> dict:
    return {"case": c.case, "scenario": c.scenario, "strategy": c.strategy, "recovery": c.recovery,
            "verdict": c.verdict, "reason": c.reason, "steps": c.steps, "checks": c.checks,
            "violations": c.violations, "first_violation": _violation(c.first_violation), "replay": c.replay}


def verdict_json(verdict: RunVerdict) -> str:
    doc = {"schema": SCHEMA, "verdict": verdict.verdict, "reason": verdict.reason, "checks": verdict.checks,
           "violations": verdict.violations, "first_violation": _violation(verdict.first_violation),
           "cases": [_case(c) for c in verdict.cases], "exit_status": exit_status(verdict)}
    if verdict.phases is not None and verdict.phases.planned:
        doc["phases"] = verdict.phases.as_dict()
    if verdict.crashes:
        doc["crashes"] = verdict.crashes
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def invariants_csv(verdict: RunVerdict) -> str:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(COLUMNS)
    for c in verdict.cases:
        for r in c.rows:
            passed = "unknown" if r.passed is None else "true" if r.passed else "false"
            writer.writerow([c.scenario, c.strategy, c.recovery, r.step, r.invariant, passed, r.detail])
    return text.getvalue()


def write_outputs(out_dir: str, verdict: RunVerdict) -> None:
    """Write verdict.json and invariants.csv into ``out_dir`` (each through a tmp file + rename)."""
    for name, text in (("invariants.csv", invariants_csv(verdict)), ("verdict.json", verdict_json(verdict))):
        path = os.path.join(out_dir, name)
        with open(path + ".tmp", "w", newline="") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


def verdict_line(verdict: RunVerdict) -> str:
    """One line: the verdict, and the first violation with its replay or why nothing can be said."""
    counts = f"{len(verdict.cases)} case(s), {verdict.checks} checks, {verdict.violations} violation(s)"
    if is_partial(verdict):
        missing = "; ".join(f"{p} (needs {n})" if n else p for p, n in verdict.phases.not_run.items())
        return f"verdict: partial pass ({counts}); not run here: {missing}"
    if verdict.verdict == "pass":
        return f"verdict: pass ({counts})"
    if verdict.verdict == "unknown":
        return f"verdict: unknown, cannot judge: {verdict.reason} ({counts})"
    v = verdict.first_violation
    return (f"verdict: fail ({counts}); first: {v.case} step {v.step} invariant '{v.invariant}': {v.detail}; "
            f"replay: {v.replay}")
