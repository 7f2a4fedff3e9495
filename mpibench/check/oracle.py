"""Who should contribute to a step: a pure function of the case's schedule and config.

The checker's own reading of the fault semantics, from ``case.json`` alone:

* under ``shrink`` a killed worker is gone from its kill step on; under
  ``respawn`` its replacement contributes from the redone step, so nobody is gone;
* while a partition is active, only the strict-majority side of the live
  members commits (no such side: nothing may commit);
* a worker delayed by at least ``straggler_deadline`` seconds (when that is
  above 0) is dropped from the step as late;
* everyone else alive and on the committing side contributes.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Expectation:
    live: frozenset  # members alive at the step
    committing_side: frozenset | None  # None: no side holds a strict majority
    contributors: frozenset  # live, on the committing side, on time
    late: frozenset
    cut: frozenset


@dataclass(frozen=True)
class FaultPlan:
    world_size: int
    recovery: str
    straggler_s: float
    kills: tuple  # (rank, step)
    delays: tuple  # (rank, steps, seconds)
    partitions: tuple  # (sides, start, end)

    @classmethod
    def from_case(cls, info: dict) -> "FaultPlan":
        s = info.get("schedule") or {}
        return cls(int(info["world_size"]), info["recovery"], float(info["config"].get("straggler_deadline", 0)),
                   tuple((int(k["rank"]), int(k["step"])) for k in s.get("kills", [])),
                   tuple((int(d["rank"]), frozenset(d["steps"]), float(d["seconds"])) for d in s.get("delays", [])),
                   tuple((tuple(frozenset(side) for side in p["sides"]), int(p["start"]), p["end"])
                         for p in s.get("partitions", [])))

    def gone_by(self, step: int) -> frozenset:
        if self.recovery == "respawn":
            return frozenset()
        return frozenset(rank for rank, at in self.kills if at <= step)

    def killed_workers(self) -> dict[int, int]:
        """Worker -> its first scheduled kill step."""
        first: dict[int, int] = {}
        for rank, at in self.kills:
            first[rank] = min(at, first.get(rank, at))
        return first

    def expect(self, step: int) -> Expectation:
        live = frozenset(range(self.world_size)) - self.gone_by(step)
        side = live
        for sides, start, end in self.partitions:
            if start <= step and (end is None or step < end):
                majority = [s & live for s in sides if 2 * len(s & live) > len(live)]
                side = majority[0] if majority else None
                break
        late = frozenset()
        if self.straggler_s > 0:
            late = frozenset(r for r, steps, secs in self.delays if step in steps and secs >= self.straggler_s)
        contributors = (side - late) if side is not None else frozenset()
        cut = live - side if side is not None else live
        return Expectation(live, side, contributors, late & (side or frozenset()), cut)
