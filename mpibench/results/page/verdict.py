"""The run's verdict: from the checker's ``verdict.json`` when there is one, else from invariants.csv.

Three values, as the checker gives them: ``pass`` (every check held and there
was at least one), ``fail`` (some check was violated), ``unknown`` (a check
gave no verdict, a planned case left no rows, or nothing was checked). A case
is one scenario under one strategy and recovery policy, in plan order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..inputs import RunFiles, plan_pairs

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"
UNJUDGED = "unjudged"  # no verdict.json yet: the page says so and claims nothing
MEASURED = "measured"  # benchmarks only: nothing to judge, every sum right


@dataclass(frozen=True)
class Violation:
    scenario: str
    strategy: str
    recovery: str
    step: object
    invariant: str
    detail: str
    replay: str


@dataclass(frozen=True)
class Case:
    scenario: str
    strategy: str
    recovery: str
    verdict: str
    steps: int
    checks: int
    violations: int
    first: Violation | None = None
    unknown: int = 0
    reason: str = ""  # why the checker could not judge, when it could not


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str | None
    checks: int
    violations: int
    first: Violation | None
    cases: list[Case] = field(default_factory=list)
    source: str = "invariants.csv"
    not_run: tuple = ()  # (phase, what it needs): planned phases the launch could not run
    unfinished: tuple = ()  # planned phases that never ended
    case_count: int | None = None  # cases judged elsewhere (a sweep's, each in its own folder)

    @property
    def partial(self) -> bool:
        return self.verdict == PASS and bool(self.not_run)


def replay_for(info: dict, scenario: str, strategy: str, recovery: str | None = None) -> str:
    """The ``run`` command that replays one case of this run, from run.json's config ('' if unknown)."""
    config = info.get("config")
    if not isinstance(config, dict):
        return ""
    try:
        from mpibench.base.config import RunConfig, replay_command
        from mpibench.base.launch_command import from_record

        names = RunConfig.__dataclass_fields__
        values = {k: v for k, v in config.items() if k in names}
        values.update(scenario=scenario, strategy=strategy)
        if recovery:
            values["recovery"] = recovery
        # launched as the run was (run.json), not as this process would launch it
        launch = from_record(info.get("replay_launch"))  # launched as the run was, not as this process would
        return replay_command(RunConfig(**values), int(info.get("ranks", 1)), launch=launch)
    except (TypeError, ValueError, ImportError):
        return ""


def from_checker(data: dict) -> Verdict:
    """verdict.json as the checker writes it (schema 1)."""
    def violation(v):
        if not isinstance(v, dict):
            return None
        return Violation(*(str(v.get(k, "")) for k in ("scenario", "strategy", "recovery", "step", "invariant",
                                                        "detail", "replay")))

    cases = [Case(str(c.get("scenario", "")), str(c.get("strategy", "")), str(c.get("recovery", "")),
                  str(c.get("verdict", UNKNOWN)), int(c.get("steps") or 0), int(c.get("checks") or 0),
                  int(c.get("violations") or 0), violation(c.get("first_violation")),
                  reason=str(c.get("reason") or ""))
             for c in data.get("cases", []) if isinstance(c, dict)]
    phases = data.get("phases") if isinstance(data.get("phases"), dict) else {}
    not_run = tuple((str(p.get("phase", "")), str(p.get("needs") or "")) for p in phases.get("not_run") or []
                    if isinstance(p, dict))
    return Verdict(str(data.get("verdict", UNKNOWN)), data.get("reason"), int(data.get("checks") or 0),
                   int(data.get("violations") or 0), violation(data.get("first_violation")), cases, "verdict.json",
                   not_run, tuple(str(p) for p in phases.get("unfinished") or []))


def recoveries(steps: pd.DataFrame | None) -> dict[tuple[str, str], str]:
    if steps is None or "recovery" not in steps.columns:
        return {}
    first = steps.drop_duplicates(["scenario", "strategy"])
    return {(str(r.scenario), str(r.strategy)): str(r.recovery) for r in first.itertuples(index=False)}


def from_invariants(files: RunFiles) -> Verdict:
    """The verdict the rows of invariants.csv give, case by case in plan order."""
    inv, steps = files["invariants.csv"], files["steps.csv"]
    recovery = recoveries(steps)
    default_recovery = str(files.info.get("config", {}).get("recovery", "")) if files.info else ""
    cases = []
    for scenario, strategy in plan_pairs(files):
        rec = recovery.get((scenario, strategy), default_recovery)
        mine = inv[(inv.scenario.astype(str) == scenario) & (inv.strategy.astype(str) == strategy)] \
            if inv is not None else inv
        n_steps = 0 if steps is None else int(((steps.scenario.astype(str) == scenario)
                                               & (steps.strategy.astype(str) == strategy)).sum())
        cases.append(case_of(files.info, scenario, strategy, rec, mine, n_steps))
    return combine(cases, inv is not None)


def case_of(info: dict, scenario: str, strategy: str, recovery: str, rows: pd.DataFrame | None,
            n_steps: int) -> Case:
    if rows is None or rows.empty:
        return Case(scenario, strategy, recovery, UNKNOWN, n_steps, 0, 0)
    passed = rows.passed.astype(str).str.strip().str.lower()
    bad = rows[passed != "true"]
    unknown = int((passed == "unknown").sum())
    first = None
    if not bad.empty:
        false = bad[passed[bad.index] == "false"]
        row = (false if not false.empty else bad).iloc[0]
        first = Violation(scenario, strategy, recovery, row.step, str(row.invariant),
                          "" if pd.isna(row.get("detail")) else str(row.get("detail")),
                          replay_for(info, scenario, strategy, recovery))
    verdict = FAIL if (passed == "false").any() else (UNKNOWN if unknown else PASS)
    return Case(scenario, strategy, recovery, verdict, n_steps, len(rows), len(bad), first, unknown)


def combine(cases: list[Case], checked: bool) -> Verdict:
    checks = sum(c.checks for c in cases)
    violations = sum(c.violations for c in cases)
    failed = [c for c in cases if c.verdict == FAIL]
    unknown = [c for c in cases if c.verdict == UNKNOWN]
    first = next((c.first for c in failed), None) or next((c.first for c in unknown if c.first), None)
    if failed:
        return Verdict(FAIL, f"{len(failed)} of {len(cases)} cases violated an invariant", checks, violations,
                       first, cases)
    if not checked or not cases or checks == 0:
        return Verdict(UNKNOWN, "no invariant was checked in this folder", checks, violations, None, cases)
    if unknown:
        silent = [c for c in unknown if c.checks == 0]
        reason = (f"{len(silent)} planned case(s) left no checks (first: {silent[0].scenario}/{silent[0].strategy})"
                  if silent else f"{sum(c.unknown for c in unknown)} check(s) gave no verdict")
        return Verdict(UNKNOWN, reason, checks, violations, first, cases)
    return Verdict(PASS, None, checks, violations, None, cases)


def judge_command(out_dir: str) -> str:
    """The command that judges ``out_dir``, runnable as pasted (this interpreter, absolute path)."""
    import os
    import shlex
    import sys

    return shlex.join([sys.executable, "-m", "mpibench", "check", os.path.abspath(out_dir)])


def unjudged(files: RunFiles) -> Verdict:
    """A run folder the checker has not judged yet: its cases listed, no verdict claimed."""
    from dataclasses import replace

    cases = [replace(c, verdict=UNJUDGED, first=None) for c in from_invariants(files).cases]
    return Verdict(UNJUDGED, f"not judged yet: run {judge_command(files.out_dir)}", 0, 0, None, cases,
                   "no verdict.json in this folder")


def verdict_of(files: RunFiles) -> Verdict:
    """verdict.json's verdict; a run folder without one is not judged yet (never a guess from
    partial CSVs); a folder that lists no cases (a sweep's) falls back to invariants.csv."""
    if files.verdict is not None:
        return from_checker(files.verdict)
    if isinstance(files.info, dict) and files.info.get("cases"):
        return unjudged(files)
    if files["invariants.csv"] is None and files["sweep.csv"] is not None:
        return from_sweep(files["sweep.csv"])
    if files["invariants.csv"] is None and files["steps.csv"] is None and files["bench.csv"] is not None:
        return from_bench(files["bench.csv"])
    return from_invariants(files)


def from_bench(bench: pd.DataFrame) -> Verdict:
    """A folder of measurements only (``bench``, a merged scaling job): no invariant to judge;
    a measured reduction that gave a wrong sum fails it, as it fails the ``bench`` command."""
    measured = bench[bench.get("tag", pd.Series(["measured"] * len(bench))).astype(str) == "measured"]
    wrong = int(pd.to_numeric(measured.get("errors"), errors="coerce").fillna(0).sum()) if "errors" in bench else 0
    if wrong:
        return Verdict(FAIL, f"{wrong} wrong element(s) in the measured reductions (bench.csv, column errors)",
                       0, wrong, None, source="bench.csv")
    return Verdict(MEASURED, "measurements only: no correctness case ran in this folder; every measured "
                   "reduction gave the right sum", 0, 0, None, source="bench.csv")


def from_sweep(sweep: pd.DataFrame) -> Verdict:
    """A sweep folder's verdict from sweep.csv: every case judged by the checker in its own
    folder; a case that violated fails the sweep, one that crashed, hung or has no verdict
    leaves it unknown (named), and a sweep of no case is unknown."""
    outcome = sweep.get("outcome", pd.Series(["ok"] * len(sweep))).astype(str)
    checks = int(pd.to_numeric(sweep.get("checks"), errors="coerce").fillna(0).sum()) if "checks" in sweep else 0
    violations = int(pd.to_numeric(sweep.get("violations"), errors="coerce").fillna(0).sum()) \
        if "violations" in sweep else 0
    bad = sweep[outcome != "ok"]
    if violations or (outcome == "violation").any():
        first = sweep[pd.to_numeric(sweep.get("violations"), errors="coerce").fillna(0) > 0]
        row = (first if not first.empty else bad).iloc[0]
        return Verdict(FAIL, f"{len(bad)} of {len(sweep)} sweep case(s) did not end cleanly; first: {row['case']}",
                       checks, violations, None, source="sweep.csv", case_count=len(sweep))
    if sweep.empty or not bad.empty:
        reason = ("the sweep holds no case" if sweep.empty else
                  f"{len(bad)} of {len(sweep)} sweep case(s) ended without a pass (first: {bad.iloc[0]['case']}, "
                  f"{bad.iloc[0].get('outcome', '')})")
        return Verdict(UNKNOWN, reason, checks, violations, None, source="sweep.csv", case_count=len(sweep))
    return Verdict(PASS, None, checks, violations, None, source="sweep.csv", case_count=len(sweep))
