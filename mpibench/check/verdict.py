"""Verdicts: per step and invariant, per case, per run; three-valued (pass, fail, unknown).

``check_case`` and ``check_run`` never raise: a history that is missing or
cannot be read, or a checker that breaks, gives "unknown" with the reason.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import completeness, crashes
from .case import CaseModel
from .history import CannotJudge, read_json
from .invariants import INVARIANTS, NO_COMMIT


@dataclass(frozen=True)
class Row:
    step: int
    invariant: str
    passed: bool | None  # None: the check could not be decided
    detail: str


@dataclass(frozen=True)
class Violation:
    case: str
    scenario: str
    strategy: str
    recovery: str
    step: int
    invariant: str
    detail: str
    replay: str


@dataclass
class CaseVerdict:
    case: str
    scenario: str = ""
    strategy: str = ""
    recovery: str = ""
    verdict: str = "unknown"
    reason: str | None = None
    steps: int = 0  # steps that committed
    replay: str = ""
    rows: list = field(default_factory=list)
    reference_every: int = 1  # the float64 reference ran on steps divisible by this

    @property
    def checks(self) -> int:
        return len(self.rows)

    @property
    def violations(self) -> int:
        return sum(1 for r in self.rows if r.passed is False)

    @property
    def first_violation(self) -> Violation | None:
        for r in self.rows:
            if r.passed is False:
                return Violation(self.case, self.scenario, self.strategy, self.recovery, r.step, r.invariant,
                                 r.detail, self.replay)
        return None


@dataclass
class RunVerdict:
    verdict: str
    reason: str | None
    cases: list = field(default_factory=list)
    phases: completeness.PhaseAccount | None = None  # what became of each planned phase
    crashes: list = field(default_factory=list)  # the ranks' crash records (check/crashes.py)

    @property
    def checks(self) -> int:
        return sum(c.checks for c in self.cases)

    @property
    def violations(self) -> int:
        return sum(c.violations for c in self.cases)

    @property
    def first_violation(self) -> Violation | None:
        return next((c.first_violation for c in self.cases if c.first_violation), None)


def check_case(case_dir: str, reference_every: int | None = None) -> CaseVerdict:
    """Judge one case from its history folder.

    ``reference_every``: compare with the float64 reference on steps divisible by it
    (None: the case's own ``--check-every``, as the online check does; 1: every step)."""
    name = os.path.basename(os.path.normpath(case_dir))
    verdict = CaseVerdict(name)
    try:
        case = CaseModel(case_dir, reference_every)
    except CannotJudge as exc:
        verdict.reason = str(exc)
        return verdict
    except Exception as exc:  # noqa: BLE001 - a checker that breaks cannot judge, never passes
        verdict.reason = f"checker error reading the history: {type(exc).__name__}: {exc}"
        return verdict
    info = case.info
    verdict.scenario, verdict.strategy = info.get("scenario", ""), info.get("strategy", "")
    verdict.recovery, verdict.replay = info.get("recovery", ""), info.get("replay", "")
    verdict.reference_every = case.reference_every
    for view in case.views():
        verdict.steps += view.agreed is not None
        for inv in (INVARIANTS if view.agreed is not None else NO_COMMIT):
            if getattr(inv, "applies", None) is None or inv.applies(case):
                verdict.rows.append(_judge(inv, case, view))
    failed = verdict.violations > 0
    undecided = [r for r in verdict.rows if r.passed is None]
    verdict.verdict = "fail" if failed else "unknown" if undecided else "pass"
    if undecided and not failed:
        verdict.reason = f"{undecided[0].invariant} at step {undecided[0].step}: {undecided[0].detail}"
    return verdict


def _judge(inv, case, view) -> Row:
    try:
        passed, detail = inv.check(case, view)
    except Exception as exc:  # noqa: BLE001 - a broken check is unknown, never a pass
        passed, detail = None, f"check raised {type(exc).__name__}: {exc}"
    return Row(view.step, inv.NAME, passed, detail)


def read_case_ids(out_dir: str) -> list[str]:
    """The case ids ``run.json`` lists, in plan order (CannotJudge if it cannot say)."""
    info = read_json(os.path.join(out_dir, "run.json"), f"no run.json in {out_dir}", "run.json")
    cases = info.get("cases")
    if not isinstance(cases, list) or not cases:
        raise CannotJudge("run.json lists no cases (a run from before histories were kept?)")
    return [str(c) for c in cases]


def check_run(out_dir: str, checked: dict | None = None, after_verdict=()) -> RunVerdict:
    """Judge every case ``run.json`` lists, then whether every planned phase ended
    (:mod:`.completeness`); fail if any case fails, else unknown if anything is unknown.

    ``checked``: case id -> CaseVerdict already reached on that case's complete history in
    this process (taken as it is, not judged again, if it compared every step with the
    reference; a thinned online verdict is judged again in full, so the verdict of record
    is the same whether it comes from the job or from ``check DIR``). ``after_verdict``:
    planned phases that follow this judgement (the job's page).
    """
    phases = completeness.account(out_dir, after_verdict)
    verdict = _check_cases(out_dir, checked or {}, phases.not_run)
    verdict = completeness.apply(completeness.with_sweep(verdict, out_dir, phases, check_run), phases)
    return crashes.apply(verdict, out_dir)


def _check_cases(out_dir: str, checked: dict, not_run) -> RunVerdict:
    try:
        ids = read_case_ids(out_dir)
    except CannotJudge as exc:
        return RunVerdict("unknown", str(exc))
    cases = []
    for cid in (c for c in ids if c not in not_run):  # a case the launch could not run has no history
        folder = os.path.join(out_dir, "history", cid)
        if cid in checked and checked[cid].reference_every == 1:
            cases.append(checked[cid])
        elif not os.path.isdir(folder):
            cases.append(CaseVerdict(cid, reason=f"history/{cid} missing"))
        else:
            cases.append(check_case(folder, reference_every=1))
    failed = [c for c in cases if c.verdict == "fail"]
    unknown = [c for c in cases if c.verdict == "unknown"]
    if failed:
        return RunVerdict("fail", None, cases)
    if unknown:
        return RunVerdict("unknown", f"{unknown[0].case}: {unknown[0].reason}", cases)
    return RunVerdict("pass", None, cases)
