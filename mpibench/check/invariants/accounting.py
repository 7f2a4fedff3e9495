"""``accounting``: effective batch = sum of the contributing counts = size of the union.

Judged in every copy of the claim: each record that carries the step's outcome and
the step's row of ``steps.csv`` (:mod:`..steprows`)."""
from __future__ import annotations

from ..steprows import count_problem

NAME = "accounting"


def contributor_batches(view) -> dict[int, tuple]:
    """Each contributing worker's batch, from its own committed record."""
    own = {a.worker: a.batch for a in view.active}
    return {w: own[w] for w in (view.agreed.contributing or ()) if w in own}


def check(case, view):
    agreed = view.agreed
    batches = contributor_batches(view)
    missing = sorted(set(agreed.contributing or ()) - set(batches))
    if missing:
        return False, f"no committed record of contributing worker(s) {' '.join(map(str, missing))}"
    union = [i for w in sorted(batches) for i in batches[w]]
    total = sum(len(b) for b in batches.values())
    if len(set(union)) != len(union):
        return False, "a sample appears twice in the union of the contributing batches"
    if not (agreed.effective_batch == total == len(union)):
        return False, (f"effective batch {agreed.effective_batch}, contributing counts sum to {total}, "
                       f"union holds {len(union)}")
    problem = count_problem(case, view, total)
    if problem:
        return False, problem
    return True, f"effective batch {total}"
