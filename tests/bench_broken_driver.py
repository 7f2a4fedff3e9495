"""``python -m mpibench bench`` with a ring that gets one element wrong on rank 0.

The harness must count the wrong element and fail the run (exit 1).
"""
from __future__ import annotations

from mpibench.sync import STRATEGIES
from mpibench.sync.ring import RingAllreduce


class OffByOneRing(RingAllreduce):
    def reduce(self, buf):
        reduction = super().reduce(buf)
        if self.comm.rank == 0 and len(buf):
            buf[0] += 1
        return reduction


if __name__ == "__main__":
    STRATEGIES["ring"] = OffByOneRing
    from mpibench.cli import main

    main()
