"""Fault schedules: plain data saying what happens to which worker, when.

A :class:`Schedule` is a frozen list of events over worker ids (the stable
names ranks keep through shrinking and respawning). Each event belongs to a
fault kind, one module per kind in :mod:`.kinds` (:class:`Kill`,
:class:`Delay`, :class:`Partition` and any outside kind), which holds its
dataclass, validation, TOML form, random drawing and shrink moves.

Schedules come from a named scenario (:mod:`.scenarios`), a TOML file
(:mod:`.toml_io`) or a seed (:mod:`.random_schedule`); all pass through
:func:`validate`, which names the first problem in one line. Nothing here
touches MPI: the schedule is data, the wrapper carries it out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import kinds
from .kinds.delay import DELAY_WHERE, MAX_DELAY_S, Delay
from .kinds.kill import COUNTED, KILL_PHASES, PHASES, Kill
from .kinds.partition import Partition

__all__ = ["COUNTED", "DELAY_WHERE", "KILL_PHASES", "MAX_DELAY_S", "PHASES", "Delay", "Kill", "Partition",
           "Schedule", "validate"]


@dataclass(frozen=True)
class Schedule:
    """A named, validated list of fault events for one world size."""

    name: str
    world_size: int = 0
    events: tuple = field(default_factory=tuple)
    # Run options a scenario needs (e.g. a straggler deadline, small shards).
    options: tuple[tuple[str, object], ...] = ()

    def __post_init__(self):
        # Canonical order (the order of kinds.KINDS: kills, delays, partitions, then outside
        # kinds; stable within a kind) so that equal schedules compare equal however written.
        order = {k.NAME: i for i, k in enumerate(kinds.KINDS)}
        events = sorted(self.events, key=lambda e: order.get(getattr(e, "kind", ""), len(order)))
        object.__setattr__(self, "events", tuple(events))
        object.__setattr__(self, "options", tuple(self.options))

    @property
    def kills(self) -> list[Kill]:
        return [e for e in self.events if isinstance(e, Kill)]

    @property
    def delays(self) -> list[Delay]:
        return [e for e in self.events if isinstance(e, Delay)]

    @property
    def partitions(self) -> list[Partition]:
        return [e for e in self.events if isinstance(e, Partition)]

    def option(self, name: str, default=None):
        return dict(self.options).get(name, default)

    def summary(self) -> str:
        """One line: the name and every event."""
        body = "; ".join(e.text() for e in self.events) or "no faults"
        opts = "".join(f" {k}={v}" for k, v in self.options)
        return f"{self.name} (n={self.world_size}): {body}{opts}"

    def killed_by(self, step: int) -> set[int]:
        """Workers whose kill is scheduled at or before ``step``."""
        return {k.rank for k in self.kills if k.step <= step}

    def partition_at(self, step: int) -> Partition | None:
        for p in self.partitions:
            if p.active(step):
                return p
        return None

    def delay_at(self, rank: int, step: int) -> Delay | None:
        for d in self.delays:
            if d.rank == rank and step in d.steps:
                return d
        return None

    def of_kind(self, name: str) -> list:
        """The events of the kind called ``name``."""
        return [e for e in self.events if getattr(e, "kind", None) == name]

    def needs_ulfm(self) -> bool:
        return any(kinds.of(e).NEEDS_ULFM for e in self.events)


def validate(schedule: Schedule) -> Schedule:
    """``schedule`` itself, or ValueError naming the first problem in one line.

    Every event is checked by its kind first, then each kind checks the
    schedule as a whole (kills, delays, partitions, outside kinds).
    """
    n = schedule.world_size
    if n < 1:
        raise ValueError(f"schedule {schedule.name!r}: world size must be at least 1, got {n}")
    for event in schedule.events:
        kinds.of(event).check_event(event, n)
    for kind in kinds.KINDS:
        kind.check_schedule(schedule)
    return schedule
