"""Fault schedules: plain data saying what happens to which worker, when.

A :class:`Schedule` is a frozen list of events over worker ids (the stable
names ranks keep through shrinking and respawning):

* :class:`Kill` -- the worker's process is SIGKILLed at ``step`` in ``phase``
  (``before_compute``, ``mid_reduction`` after ``messages`` data-plane
  messages, ``after_reduce`` before the update is applied, ``after_apply``,
  or ``recovery``: while the survivors recover from another kill at that step).
* :class:`Delay` -- the worker sleeps ``seconds`` at each of ``steps``, before
  computing (``where="compute"``) or before its first send (``"send"``).
* :class:`Partition` -- from ``from_step`` up to (not including) ``to_step``
  data-plane messages between ``sides`` fail; ``to_step=None`` never heals.

Schedules come from a named scenario (:mod:`.scenarios`), a TOML file
(:mod:`.toml_io`) or a seed (:mod:`.random_schedule`); all pass through
:func:`validate`, which names the first problem in one line. Nothing here
touches MPI: the schedule is data, the wrapper carries it out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

PHASES = ("before_compute", "mid_reduction", "after_reduce", "after_apply", "recovery")
# Kill phases beyond PHASES (kept apart so the random schedules draw as before):
# mid_gather dies after ``messages`` data-plane messages sent after the update began (a
# sharded strategy's all-gather); where none are sent it fires at after_apply.
KILL_PHASES = PHASES + ("mid_gather",)
COUNTED = ("mid_reduction", "mid_gather")  # the phases that count messages
DELAY_WHERE = ("compute", "send")
MAX_DELAY_S = 30.0


@dataclass(frozen=True)
class Kill:
    rank: int
    step: int
    phase: str = "before_compute"
    messages: int = 1  # mid_reduction: die after this many data-plane messages

    kind = "kill"

    def text(self) -> str:
        extra = f" after {self.messages} msg" if self.phase in COUNTED else ""
        return f"kill {self.rank}@{self.step}/{self.phase}{extra}"


@dataclass(frozen=True)
class Delay:
    rank: int
    steps: tuple[int, ...]
    seconds: float
    where: str = "compute"

    kind = "delay"

    def text(self) -> str:
        return f"delay {self.rank}@{','.join(map(str, self.steps))} {self.seconds:g}s/{self.where}"


@dataclass(frozen=True)
class Partition:
    sides: tuple[tuple[int, ...], ...]
    from_step: int
    to_step: int | None = None  # first healed step; None: never heals

    kind = "partition"

    def active(self, step: int) -> bool:
        return self.from_step <= step and (self.to_step is None or step < self.to_step)

    def side_of(self, rank: int) -> int:
        for i, side in enumerate(self.sides):
            if rank in side:
                return i
        return -1

    def text(self) -> str:
        sides = "|".join(" ".join(map(str, s)) for s in self.sides)
        end = "end" if self.to_step is None else str(self.to_step)
        return f"partition [{sides}] {self.from_step}..{end}"


@dataclass(frozen=True)
class Schedule:
    """A named, validated list of fault events for one world size."""

    name: str
    world_size: int = 0
    events: tuple = field(default_factory=tuple)
    # Run options a scenario needs (e.g. a straggler deadline, small shards).
    options: tuple[tuple[str, object], ...] = ()

    def __post_init__(self):
        # Canonical order (kills, delays, partitions; stable within a kind) so that
        # equal schedules compare equal however they were written.
        order = {"kill": 0, "delay": 1, "partition": 2}
        events = sorted(self.events, key=lambda e: order.get(getattr(e, "kind", ""), 3))
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

    def needs_ulfm(self) -> bool:
        return bool(self.kills)


def validate(schedule: Schedule) -> Schedule:
    """``schedule`` itself, or ValueError naming the first problem in one line."""
    n = schedule.world_size
    if n < 1:
        raise ValueError(f"schedule {schedule.name!r}: world size must be at least 1, got {n}")
    for event in schedule.events:
        _check_event(event, n)
    _check_kills(schedule)
    _check_delays(schedule)
    _check_partitions(schedule)
    return schedule


def _check_rank(rank, n: int, what: str) -> None:
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < n:
        raise ValueError(f"{what}: rank {rank!r} is outside the world of {n} ranks")


def _check_step(step, what: str) -> None:
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"{what}: step {step!r} must be a whole number >= 0")


def _check_event(event, n: int) -> None:
    what = event.text() if hasattr(event, "text") else repr(event)
    if isinstance(event, Kill):
        _check_rank(event.rank, n, what)
        _check_step(event.step, what)
        if event.phase not in KILL_PHASES:
            raise ValueError(f"{what}: unknown phase {event.phase!r} (choose from {', '.join(KILL_PHASES)})")
        if not isinstance(event.messages, int) or event.messages < 1:
            raise ValueError(f"{what}: messages must be a whole number >= 1")
    elif isinstance(event, Delay):
        _check_rank(event.rank, n, what)
        if not event.steps:
            raise ValueError(f"{what}: a delay needs at least one step")
        for s in event.steps:
            _check_step(s, what)
        if len(set(event.steps)) != len(event.steps):
            raise ValueError(f"{what}: a step is listed twice")
        if not isinstance(event.seconds, (int, float)) or not 0 < event.seconds <= MAX_DELAY_S:
            raise ValueError(f"{what}: seconds must be in (0, {MAX_DELAY_S:g}]")
        if event.where not in DELAY_WHERE:
            raise ValueError(f"{what}: unknown place {event.where!r} (choose from {', '.join(DELAY_WHERE)})")
    elif isinstance(event, Partition):
        _check_step(event.from_step, what)
        if event.to_step is not None:
            _check_step(event.to_step, what)
            if event.to_step <= event.from_step:
                raise ValueError(f"{what}: to_step must come after from_step")
        if len(event.sides) < 2 or any(len(s) == 0 for s in event.sides):
            raise ValueError(f"{what}: needs at least two non-empty sides")
        everyone = [r for side in event.sides for r in side]
        for r in everyone:
            _check_rank(r, n, what)
        if len(set(everyone)) != len(everyone):
            raise ValueError(f"{what}: a rank is on two sides")
        if sorted(everyone) != list(range(n)):
            raise ValueError(f"{what}: sides must cover every rank 0..{n - 1}")
    else:
        raise ValueError(f"unknown event {event!r}")


def _check_kills(schedule: Schedule) -> None:
    kills = schedule.kills
    ranks = [k.rank for k in kills]
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"schedule {schedule.name!r}: a rank is killed twice")
    if len(set(ranks)) >= schedule.world_size:
        raise ValueError(f"schedule {schedule.name!r} would kill every rank")
    for k in kills:
        if k.phase == "recovery" and not any(o.step == k.step and o.phase != "recovery" for o in kills):
            raise ValueError(f"{k.text()}: dying during recovery needs another kill at step {k.step}")


def _check_delays(schedule: Schedule) -> None:
    died = {k.rank: k.step for k in schedule.kills}
    seen: set[tuple[int, int]] = set()
    for d in schedule.delays:
        for s in d.steps:
            if (d.rank, s) in seen:
                raise ValueError(f"{d.text()}: overlaps another delay of rank {d.rank} at step {s}")
            seen.add((d.rank, s))
            if d.rank in died and s >= died[d.rank]:
                raise ValueError(f"{d.text()}: rank {d.rank} is dead by step {s}")


def _check_partitions(schedule: Schedule) -> None:
    parts = sorted(schedule.partitions, key=lambda p: p.from_step)
    for a, b in zip(parts, parts[1:]):
        if a.to_step is None or b.from_step < a.to_step:
            raise ValueError(f"{b.text()}: overlaps {a.text()}")
    for p in parts:
        # Any worker may sit on any side: records and re-syncs follow the committing side.
        for k in schedule.kills:
            if p.active(k.step):
                raise ValueError(f"{k.text()}: kills during {p.text()} are not supported")
        for d in schedule.delays:
            if any(p.active(s) for s in d.steps):
                raise ValueError(f"{d.text()}: delays during {p.text()} are not supported")
