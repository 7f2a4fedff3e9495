"""Completeness: did every phase the run planned leave its record?

A run lists its planned phases in ``run.json`` (``phases``, in plan order) before the
first one starts, and each phase leaves ``DIR/phases/NAME.json`` when it ends
(``{"phase", "status": "finished" | "not_run", "needs"}``). This module reads both
with its own code (the checker shares no reader with the production path) and says
which phases finished, which the launch could not run (and what they need) and which
never ended. A run with a phase that never ended cannot be judged a pass, whatever
its histories say: the checker calls it unknown and names the phase. A run whose
every phase that ran passed, with some not run, is a partial pass (its own status).

A folder whose run.json lists no phases (a single ``run``, a sweep case, a run from
before phases were kept) is judged on its histories alone.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

PHASES_DIR = "phases"
FINISHED, NOT_RUN = "finished", "not_run"
# The page follows the verdict: a job judging itself has not built it yet.
AFTER_VERDICT = ("report",)


@dataclass
class PhaseAccount:
    """What became of each planned phase (empty ``planned``: the run listed none)."""

    planned: list = field(default_factory=list)
    finished: list = field(default_factory=list)
    not_run: dict = field(default_factory=dict)  # phase -> what the launch lacked
    missing: list = field(default_factory=list)  # planned, no record: never ended
    pending: list = field(default_factory=list)  # planned after the verdict, not ended yet
    problem: str | None = None  # run.json's plan or a record could not be read
    out_dir: str = ""

    @property
    def incomplete(self) -> bool:
        return bool(self.missing) or self.problem is not None

    def as_dict(self) -> dict:
        """For verdict.json: the same whether the job judged itself (its page still to come)
        or ``check`` judged the folder afterwards."""
        return {"planned": self.planned,
                "not_run": [{"phase": p, "needs": n} for p, n in self.not_run.items()],
                "unfinished": self.missing, "problem": self.problem}

    def missing_text(self) -> str:
        """The unfinished phases in words a user reads (the first few, then a count)."""
        if self.problem is not None:
            return self.problem
        shown = [_phase_words(p) for p in self.missing[:4]]
        more = len(self.missing) - len(shown)
        text = (f"planned but never finished: {', '.join(shown)}" + (f" and {more} more" if more else "")
                + f" (no record in {PHASES_DIR}/; the job ended before them)")
        if self.missing == ["report"]:  # everything was judged; only the page is missing
            import shlex
            import sys

            text += ("; build the page with: "
                     + shlex.join([sys.executable, "-m", "mpibench", "report", os.path.abspath(self.out_dir)]))
        return text


def _phase_words(phase: str) -> str:
    return phase if phase in ("sweep", "bench", "scaling", "report") else f"case {phase}"


def _read(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None


def account(out_dir: str, after_verdict=()) -> PhaseAccount:
    """The run's phases: planned in run.json, each with its record (or none).

    ``after_verdict``: phases that run only once the verdict is written (the job's own
    judgement passes :data:`AFTER_VERDICT`); without a record they are pending, not missing.
    """
    result = PhaseAccount(out_dir=out_dir)
    try:
        info = _read(os.path.join(out_dir, "run.json")) or {}
    except (OSError, ValueError) as exc:
        result.problem = f"run.json cannot be read ({type(exc).__name__})"
        return result
    planned = info.get("phases") if isinstance(info, dict) else None
    if not isinstance(planned, list):
        return result
    result.planned = [str(p) for p in planned]
    for phase in result.planned:
        try:
            record = _read(os.path.join(out_dir, PHASES_DIR, f"{phase}.json"))
        except (OSError, ValueError) as exc:
            result.problem = f"{PHASES_DIR}/{phase}.json cannot be read ({type(exc).__name__})"
            continue
        status = record.get("status") if isinstance(record, dict) else None
        if status == FINISHED:
            result.finished.append(phase)
        elif status == NOT_RUN:
            result.not_run[phase] = str(record.get("needs") or "")
        elif record is None and phase in after_verdict:
            result.pending.append(phase)
        elif record is None:
            result.missing.append(phase)
        else:
            result.problem = f"{PHASES_DIR}/{phase}.json holds no status this checker knows ({status!r})"
    return result


def apply(verdict, phases: PhaseAccount):
    """The run's verdict with its completeness: a pass with an unfinished phase is unknown,
    naming it; a failure stays a failure (what was judged was violated), the phases listed."""
    verdict.phases = phases
    if phases.incomplete and verdict.verdict == "pass":
        verdict.verdict = "unknown"
        verdict.reason = phases.missing_text()
    elif phases.incomplete and verdict.verdict == "unknown":
        verdict.reason = f"{phases.missing_text()}; {verdict.reason}"
    return verdict


SWEEP_CASES = "sweep-cases"  # the main job's own sweep: one run folder per case that ran


def sweep_case_folders(out_dir: str) -> list[str]:
    """``DIR/sweep-cases/NAME/run`` of every sweep case that started (it wrote run.json);
    cases the sweep's time budget left out have no run folder."""
    root = os.path.join(out_dir, SWEEP_CASES)
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    return [os.path.join(root, n, "run") for n in names
            if os.path.isfile(os.path.join(root, n, "run", "run.json"))]


def with_sweep(verdict, out_dir: str, phases: PhaseAccount, judge):
    """The main job's sweep is judged too: every case folder it ran, by ``judge`` (the
    checker's own ``check_run``). A case that failed or cannot be judged joins the run's
    cases (named ``sweep-cases/NAME``), so the run's verdict and first violation say so."""
    if "sweep" not in phases.finished:
        return verdict
    for folder in sweep_case_folders(out_dir):
        sub = judge(folder)
        name = f"{SWEEP_CASES}/{os.path.basename(os.path.dirname(folder))}"
        for case in sub.cases or []:
            if case.verdict != "pass":
                case.case = f"{name}/{case.case}"
                verdict.cases.append(case)
        if sub.verdict == "fail":
            verdict.verdict, verdict.reason = "fail", None
        elif sub.verdict == "unknown" and verdict.verdict == "pass":
            verdict.verdict, verdict.reason = "unknown", f"{name}: {sub.reason}"
    return verdict


def is_partial(verdict) -> bool:
    """Everything that ran passed, and some planned phases could not run here."""
    phases = getattr(verdict, "phases", None)
    return verdict.verdict == "pass" and phases is not None and bool(phases.not_run)
