"""``membership``: one commit per step, from a strict majority, by exactly the expected workers.

Every record told the outcome names the commit's contributors, and ``steps.csv`` holds
one row for each committed step (none for another) naming the commit's members and
contributors (:mod:`..steprows`)."""
from __future__ import annotations

from ..steprows import contributing_problem, presence_problem

NAME = "membership"


def _text(ids) -> str:
    return "[" + " ".join(str(w) for w in sorted(ids)) + "]"


def check(case, view):
    passed, detail = _commit(case, view)
    if passed:
        problem = presence_problem(case, view) or (contributing_problem(view) if view.agreed else None)
        if problem:
            return False, problem
    return passed, detail


def _commit(case, view):
    exp, active = view.expect, view.active
    if not active:
        if exp.committing_side is None:
            return True, f"no side holds a strict majority of {_text(exp.live)}: nothing committed"
        return False, f"step {view.step} never committed although {_text(exp.committing_side)} hold a majority"
    if exp.committing_side is None:
        return False, (f"commit by {_text({a.worker for a in active})} although no side holds a strict "
                       f"majority of the live workers {_text(exp.live)}")
    twice = _double(view)
    if twice:
        return False, twice
    committers = {a.worker for a in active}
    if 2 * len(committers) <= len(exp.live):
        return False, f"commit by {_text(committers)}: not a strict majority of the live workers {_text(exp.live)}"
    agreed = view.agreed
    contributing = set(agreed.contributing or ())
    if not contributing <= set(agreed.members):
        return False, f"contribution from outside the membership: {_text(contributing - set(agreed.members))}"
    if contributing - exp.contributors:
        return False, f"contribution from dead, cut-off or late workers: {_text(contributing - exp.contributors)}"
    if exp.contributors - contributing:
        return False, f"live reachable on-time workers left out: {_text(exp.contributors - contributing)}"
    return True, f"{len(contributing)} of {len(exp.live)} live workers contributed"


def _double(view) -> str | None:
    """Two commits of one step: a worker committing it twice, or two different contributing sets."""
    seen: dict[int, int] = {}
    for a in view.active:
        seen[a.worker] = seen.get(a.worker, 0) + 1
    again = sorted(w for w, n in seen.items() if n > 1)
    if again:
        return f"step {view.step} committed twice by worker(s) {_text(again)}"
    sets: dict[tuple, list[int]] = {}
    for a in view.active:
        sets.setdefault(tuple(a.contributing or ()), []).append(a.worker)
    if len(sets) > 1:
        parts = "; ".join(f"{_text(c)} by {_text(ws)}" for c, ws in sorted(sets.items()))
        return f"step {view.step} committed twice: {parts}"
    return None
