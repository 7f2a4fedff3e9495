"""``steps.csv`` as the checker reads it, and every copy of a step's claims.

A committed step's claims (who contributed, the effective batch, the loss mean and
variance) are written many times over: in the record of every worker that learnt
the outcome (each contributor, a dropped straggler, a stalled member that was told)
and in the step's row of ``steps.csv``, the file the page plots. Each copy is
judged, by the invariant that owns the claim, against the checker's own model of
the step (never against another copy): ``membership`` the rows' presence and who
contributed (and who was left out, and why), ``accounting`` the effective
batch, ``equivalence`` the loss statistics, ``data`` the epoch and whose epoch
ended. This module only reads: ``steps.csv`` with the standard library's csv
reader (the columns are the output contract in DESIGN, "Outputs"), rows picked by
the case's scenario, strategy and recovery.

A run folder without ``steps.csv`` (a history copied on its own) claims nothing
there; a row that cannot be read is a violation, since the page would show it.
"""
from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass

STEPS_CSV = "steps.csv"


@dataclass(frozen=True)
class StepRow:
    """One row of ``steps.csv`` for this case, as written (``line``: its line in the file)."""

    line: int
    step: int | None
    members: tuple | None
    contributing: tuple | None
    effective_batch: float | None
    loss_mean: float | None
    loss_var: float | None
    epoch: int | None = None
    epoch_ends: tuple = ()
    excluded: dict | None = None  # worker -> why it was left out (dead, unreachable, late)
    algorithm: str = ""
    problem: str | None = None  # why a field could not be read

    def where(self) -> str:
        return f"steps.csv line {self.line}"


def _ids(text: str) -> tuple:
    return tuple(sorted(int(t) for t in text.split()))


def _number(text: str) -> float | None:
    return None if text.strip() == "" else float(text)


def _excluded(text: str) -> dict:
    pairs = [item.split(":", 1) for item in text.split()]
    return {int(w): why for w, why in pairs}


def _row(line: int, raw: dict) -> StepRow:
    try:
        step = int(raw["step"])
    except (TypeError, ValueError):
        return StepRow(line, None, None, None, None, None, None,
                       problem=f"step {raw.get('step')!r} is not a whole number")
    try:
        epoch = raw.get("epoch") or ""
        return StepRow(line, step, _ids(raw["members"]), _ids(raw["contributing"]), _number(raw["effective_batch"]),
                       _number(raw["loss_mean"]), _number(raw["loss_var"]), int(epoch) if epoch.strip() else None,
                       _ids(raw.get("epoch_ends") or ""), _excluded(raw.get("excluded") or ""),
                       raw.get("algorithm") or "")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return StepRow(line, step, None, None, None, None, None, problem=f"unreadable ({type(exc).__name__}: {exc})")


def rows(case) -> dict | None:
    """Step -> this case's rows of ``steps.csv`` (None: the run folder has no steps.csv).

    Read once per case; rows whose step cannot be read sit under the key None."""
    if "steps.csv" in case.state:
        return case.state["steps.csv"]
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.normpath(case.dir))), STEPS_CSV)
    found = None
    if os.path.isfile(path):
        found = {}
        info = case.info
        mine = (str(info.get("scenario", "")), str(info.get("strategy", "")), str(info.get("recovery", "")))
        with open(path, newline="") as f:
            for line, raw in enumerate(csv.DictReader(f), start=2):
                if (raw.get("scenario"), raw.get("strategy"), raw.get("recovery")) == mine:
                    row = _row(line, raw)
                    found.setdefault(row.step, []).append(row)
    case.state["steps.csv"] = found
    return found


def presence_problem(case, view) -> str | None:
    """``membership``: one row for a committed step, none for a step nobody committed, and the
    row's members and contributors those of the commit."""
    found = rows(case)
    if found is None:
        return None
    here = found.get(view.step, [])
    if view.step == case.steps - 1:  # rows that name no step of the case: judged once, at its end
        here = here + [r for s, rs in found.items() if s is None or not 0 <= s < case.steps for r in rs]
    bad = [r for r in here if r.problem or r.step != view.step]
    if bad:
        r = bad[0]
        return f"{r.where()}: {r.problem or f'step {r.step} is not a step of this {case.steps}-step case'}"
    agreed = view.agreed
    if agreed is None:
        return (f"{here[0].where()} claims step {view.step} committed, but no worker committed it"
                if here else None)
    if not here:
        return f"steps.csv has no row for committed step {view.step}"
    if len(here) > 1:
        return f"steps.csv has {len(here)} rows for step {view.step} (lines {' '.join(str(r.line) for r in here)})"
    row = here[0]
    if row.contributing != tuple(sorted(agreed.contributing or ())):
        return (f"{row.where()} claims contributors {_text(row.contributing)}, the commit's are "
                f"{_text(agreed.contributing or ())}")
    if row.members != tuple(sorted(agreed.members)):
        return f"{row.where()} claims members {_text(row.members)}, the commit's are {_text(agreed.members)}"
    if row.algorithm != (agreed.algorithm or ""):
        return f"{row.where()} claims algorithm {row.algorithm!r}, the contributors reduced with {agreed.algorithm!r}"
    expected = left_out(case, view)
    if row.excluded != expected:
        return f"{row.where()} claims left out {_why(row.excluded)}, the schedule leaves out {_why(expected)}"
    return None


def left_out(case, view) -> dict:
    """Who the schedule leaves out of a committed step, and why (the oracle's, not a record's)."""
    exp = view.expect
    out = {w: "dead" for w in range(case.plan.world_size) if w not in exp.live}
    out.update({w: "unreachable" for w in exp.cut})
    out.update({w: "late" for w in exp.late})
    return out


def walk_problem(case, view, epoch: int | None, ends: set) -> str | None:
    """``data``: the row's epoch (the lowest contributor's, before the step) and the workers
    whose epoch the step ended, as the checker's own walk has them."""
    row = the_row(case, view)
    if row is None:
        return None
    if row.epoch != epoch:
        return f"{row.where()} claims epoch {row.epoch!r}, the contributors' walk stands at epoch {epoch!r}"
    if set(row.epoch_ends) != ends:
        return f"{row.where()} claims epoch ends of {_text(row.epoch_ends)}, the walk ends those of {_text(ends)}"
    return None


def the_row(case, view) -> StepRow | None:
    """The step's one readable row (None where there is none to judge: ``membership`` says why)."""
    found = rows(case)
    here = [] if found is None else found.get(view.step, [])
    return here[0] if len(here) == 1 and here[0].problem is None else None


def claimers(view) -> list:
    """Every committed record of the step that carries the outcome's claims, lowest worker first."""
    return sorted((a for a in view.commits if a.contributing is not None), key=lambda a: (a.worker, a.file))


def who(a) -> str:
    """A record, as a violation names it."""
    return f"worker {a.worker}'s {a.role} record ({a.file})"


def count_problem(case, view, total: int) -> str | None:
    """``accounting``: every record's and the row's effective batch is the union's size."""
    for a in claimers(view):
        if a.effective_batch != total:
            return f"{who(a)} claims effective batch {a.effective_batch!r}, the contributing batches hold {total}"
    row = the_row(case, view)
    if row is not None and not (row.effective_batch is not None and row.effective_batch == total):
        return f"{row.where()} claims effective batch {_shown(row.effective_batch)}, the contributing batches hold {total}"
    return None


def contributing_problem(view) -> str | None:
    """``membership``: a record that was told the outcome (a stalled member's) names the
    commit's contributors (the committing records are compared among themselves)."""
    agreed = set(view.agreed.contributing or ())
    for a in claimers(view):
        if set(a.contributing) != agreed:
            return f"{who(a)} claims contributors {_text(a.contributing)}, the commit's are {_text(agreed)}"
    return None


def moments_targets(case, view) -> list:
    """(name, holder) of every copy of the loss statistics: each claiming record, then the row."""
    out = [(who(a), a) for a in claimers(view)]
    row = the_row(case, view)
    if row is not None:
        out.append((row.where(), row))
    return out


def _text(ids) -> str:
    return "[" + " ".join(str(w) for w in sorted(ids)) + "]"


def _shown(value) -> str:
    """A number as the file has it: whole numbers without a decimal point."""
    return str(int(value)) if value is not None and math.isfinite(value) and value == int(value) else repr(value)


def _why(excluded: dict) -> str:
    return "[" + " ".join(f"{w}:{why}" for w, why in sorted(excluded.items())) + "]"
