"""``data``: every consumed batch is exactly the next slice of its worker's seeded walk.

The walk is the oracle's (:mod:`mpibench.check.walk`); it is advanced here,
once per consuming worker per step, so this check runs once per step in order.
The step's row of ``steps.csv`` must name the epoch and the epoch ends this walk has.
"""
from __future__ import annotations

from ..steprows import walk_problem

NAME = "data"


def check(case, view):
    walker = case.state.get("walker")
    if walker is None:
        walker = case.state["walker"] = case.walker()
    slips = []
    consumed = 0
    contributing = set(view.agreed.contributing or ())
    before = {a.worker: walker.cursor[a.worker] for a in view.active}
    for a in sorted(view.active, key=lambda a: (a.worker, a.file)):
        slip = walker.take(a.worker, view.step, a.batch)
        consumed += 1
        if slip is not None:
            slips.append(slip.text)
    consuming = {a.worker for a in view.active}
    if contributing - consuming:
        slips.append(f"contributing worker(s) {' '.join(map(str, sorted(contributing - consuming)))} "
                     f"recorded no batch")
    if slips:
        return False, "; ".join(slips)
    ends = {w for w in consuming if walker.cursor[w][0] != before[w][0]}
    problem = walk_problem(case, view, min((before[w][0] for w in contributing & consuming), default=None), ends)
    if problem:
        return False, problem
    return True, f"{consumed} batches are the next slices of their shards' seeded epoch orders"
