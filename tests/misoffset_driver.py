"""Runs ``python -m mpibench`` with a ring whose segment plan places one piece wrongly.

``mpirun -n W python tests/misoffset_driver.py run --strategy ring ...``: the
second segment of the first bucket is shifted one element left (an overlap
with the first, a gap behind it). The ring must refuse to write with it and
the ``coverage`` invariant must name it in invariants.csv.
"""
from __future__ import annotations

from mpibench.sync import segments

_plan = segments.bucket_plan


def misplaced_plan(total: int, bucket_elems: int, parts: int) -> segments.SegmentPlan:
    plan = _plan(total, bucket_elems, parts)
    if plan.buckets and parts > 1 and plan.offsets[0, 1] > 0:
        plan.offsets[0, 1] -= 1
    return plan


if __name__ == "__main__":
    segments.bucket_plan = misplaced_plan
    from mpibench.cli import main

    main()
