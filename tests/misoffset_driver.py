"""Runs ``python -m mpibench`` with segment plans that place one piece wrongly.

``mpirun -n W python tests/misoffset_driver.py run --strategy ring|ps ...``:
the second segment of the first ring bucket (or the second PS shard) is
shifted one element left (an overlap with the first, a gap behind it). The
strategy must refuse to write with it and the ``coverage`` invariant must
name it in invariants.csv.
"""
from __future__ import annotations

from mpibench.sync import segments

_bucket_plan, _shard_plan = segments.bucket_plan, segments.shard_plan


def misplace(plan: segments.SegmentPlan) -> segments.SegmentPlan:
    if plan.buckets and plan.parts > 1 and plan.offsets[0, 1] > 0:
        plan.offsets[0, 1] -= 1
    return plan


if __name__ == "__main__":
    segments.bucket_plan = lambda *args: misplace(_bucket_plan(*args))
    segments.shard_plan = lambda *args: misplace(_shard_plan(*args))
    from mpibench.cli import main

    main()
