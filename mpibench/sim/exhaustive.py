"""Every fault interleaving of a small world, as sweep cases (``sweep --engine sim --exhaustive``).

For each world size p and strategy the plan holds, in this order:

* every single kill point: worker x step (the first ``fault_steps``) x phase,
  with ``mid_reduction`` at every message index from 1 to ``2(p-1)`` (a ring's
  sends per bucket; a kill scheduled past a strategy's last message fires at
  the next phase, so every index a strategy has is covered);
* every pair of kill points on two different workers within the first
  ``fault_steps`` steps (those that leave a survivor), in the same recovery;
  a second kill at the same step may also fall in ``recovery``;
* for a sharded strategy (one that declares a ``sharding_kind``, plugins too), and for it only, also
  every kill in its all-gather: ``mid_gather`` at every message index from 1 to ``p - 1`` (the
  reduce-scatter is the ``mid_reduction`` points; the sharded step is
  ``after_reduce``);
* every straggler drop: one worker late at one step, beyond the straggler
  deadline, before computing and before sending;
* every partition boundary: each split into two sides, cut from each of the
  first steps to each later one (healing), or never healed.

With ``momentum`` (``sweep --exhaustive --momentum MU``) every case carries optimizer state,
and the schedules that ``run`` would refuse before starting (state that no survivor would
hold: :func:`mpibench.engine.optimizer.refusal`, the production rule) are left out of the
plan and counted by their reason (:meth:`ExhaustivePlan.refusals`) instead of run.

Cases are plain :class:`~mpibench.drive.cases.Case` values, so they run,
replay and shrink like the random sweep's; their schedules pass the same
validation (:func:`mpibench.faults.schedule.validate`).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator

from mpibench.drive.cases import Case
from mpibench.faults.schedule import Delay, Kill, Partition, Schedule, validate
from mpibench.sync.registry import CHECKED, lookup

STRAGGLER_DEADLINE_S = 0.15
LATE_S = 0.6


@dataclass(frozen=True)
class ExhaustivePlan:
    workers: tuple[int, ...] = (2, 3, 4)
    strategies: tuple[str, ...] = CHECKED[:1]
    steps: int = 4
    fault_steps: int = 3
    recoveries: tuple[str, ...] = ("shrink",)
    pairs: bool = True
    momentum: float = 0.0  # > 0: optimizer state in every case; refused schedules left out

    def kill_points(self, p: int, strategy: str = CHECKED[0]) -> list[Kill]:
        phases = ["before_compute"] + [("mid_reduction", k) for k in range(1, 2 * (p - 1) + 1)] + \
                 ["after_reduce", "after_apply"]
        if lookup(strategy).sharding_kind:  # only a sharded strategy has an all-gather to die in
            phases += [("mid_gather", k) for k in range(1, p)]
        points = []
        for w, s, phase in itertools.product(range(p), range(self.fault_steps), phases):
            if isinstance(phase, tuple):
                points.append(Kill(w, s, phase[0], phase[1]))
            else:
                points.append(Kill(w, s, phase))
        return points

    def schedules(self, p: int, strategy: str = CHECKED[0]) -> Iterator[tuple[str, tuple, tuple]]:
        """(label, events, schedule options) for world size ``p`` under ``strategy``."""
        singles = self.kill_points(p, strategy)
        for k in singles:
            yield f"kill{_kill_label(k)}", (k,), ()
        if self.pairs and p >= 3:
            for a, b in itertools.combinations(singles, 2):
                if a.rank != b.rank:
                    yield f"kill{_kill_label(a)}+{_kill_label(b)}", (a, b), ()
            for a in singles:  # a second death while the survivors recover from the first
                for w in range(p):
                    if w != a.rank:
                        b = Kill(w, a.step, "recovery")
                        yield f"kill{_kill_label(a)}+{_kill_label(b)}", (a, b), ()
        for w, s, where in itertools.product(range(p), range(self.fault_steps), ("compute", "send")):
            yield f"late{w}@{s}{where[0]}", (Delay(w, (s,), LATE_S, where),), \
                (("straggler_deadline", STRAGGLER_DEADLINE_S),)
        for side in _splits(p):
            rest = tuple(r for r in range(p) if r not in side)
            for start in range(self.fault_steps):
                for end in [*range(start + 1, self.steps + 1), None]:
                    yield f"cut{''.join(map(str, side))}@{start}-{end if end is not None else 'x'}", \
                        (Partition((side, rest), start, end),), ()

    def blocks(self) -> Iterator[tuple[int, str, str]]:
        """(p, strategy, recovery) in plan order: each block is the unit a long plan is split
        into (``sweep --workers P --strategies S --recoveries R`` runs one)."""
        for p in self.workers:
            for recovery in self.recoveries:
                for strategy in self.strategies:
                    yield p, strategy, recovery

    def _block(self, p: int, strategy: str, recovery: str) -> Iterator[tuple[Schedule, str | None]]:
        """Every schedule of the block with why ``run`` refuses it (None: it runs)."""
        from mpibench.engine.optimizer import refusal

        for label, events, options in self.schedules(p, strategy):
            schedule = Schedule(f"exhaustive-{label}", p, events, options)
            validate(schedule)
            deadline = dict(options).get("straggler_deadline", 0.0)
            yield schedule, refusal(strategy, self.momentum, recovery, schedule, deadline)

    def block_cases(self, p: int, strategy: str, recovery: str) -> Iterator[Case]:
        extra = ("--momentum", f"{self.momentum:g}") if self.momentum else ()
        tail = "" if recovery == "shrink" else "-" + recovery
        tail += f"-m{self.momentum:g}" if self.momentum else ""
        for schedule, refused in self._block(p, strategy, recovery):
            if refused is None:
                label = schedule.name.removeprefix("exhaustive-")
                yield Case(f"x-n{p}-{strategy}{tail}-{label}", 0, p, strategy, recovery, self.steps, schedule, extra)

    def refusals(self, p: int, strategy: str, recovery: str) -> dict[str, int]:
        """How many of the block's schedules are refused, by the kind of reason (:func:`refusal_kind`)."""
        counts: dict[str, int] = {}
        for _, refused in self._block(p, strategy, recovery):
            if refused is not None:
                counts[refusal_kind(refused)] = counts.get(refusal_kind(refused), 0) + 1
        return counts

    def cases(self) -> Iterator[Case]:
        for block in self.blocks():
            yield from self.block_cases(*block)

    def block_count(self, p: int, strategy: str, recovery: str = "shrink") -> int:
        if not self.momentum:  # nothing is refused: every schedule is a case
            return sum(1 for _ in self.schedules(p, strategy))
        return sum(refused is None for _, refused in self._block(p, strategy, recovery))

    def count(self) -> int:
        return sum(self.block_count(p, s, r) for p, s, r in self.blocks())


def refusal_kind(reason: str) -> str:
    """A refusal's reason without the schedule's name and workers: what kind of state it would lose."""
    for needle, kind in (("both replicas", "every replica of a shard dies at one step"),
                         ("rejoins", "a worker rejoins with stale state (cut or dropped straggler)"),
                         ("no replica", "an owner's state has no replica"),
                         ("respawn", "a replacement would start without state"),
                         ("steps a copy", "the strategy steps a copy")):
        if needle in reason:
            return kind
    return reason


def _kill_label(k: Kill) -> str:
    phase = {"before_compute": "b", "after_reduce": "r", "after_apply": "a", "recovery": "v"}.get(k.phase)
    counted = ("g" if k.phase == "mid_gather" else "m") + str(k.messages)
    return f"{k.rank}@{k.step}{phase or counted}"


def _splits(p: int) -> list[tuple[int, ...]]:
    """Every split of 0..p-1 into two non-empty sides, each once (named by the side that
    holds the highest worker, so that the two orientations of a split are one case)."""
    found = []
    for size in range(1, p):
        for side in itertools.combinations(range(p), size):
            if p - 1 in side:
                found.append(side)
    return found
