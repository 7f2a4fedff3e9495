"""Delay (a straggler): a worker sleeps ``seconds`` at each of ``steps``, before
computing (``where="compute"``) or before its first send of the step (``"send"``).

The wrapper (:class:`mpibench.faults.wrapper.Injector`) sleeps; a sleep ends
early when the step was committed without the worker, and the data plane then
reports it late (:mod:`mpibench.faults.straggler`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .common import (check_rank, check_step, toml_int_tuple, toml_number, toml_rank, toml_str, toml_string,
                     toml_value)

NAME = "delay"
DELAY_WHERE = ("compute", "send")
MAX_DELAY_S = 30.0
GLYPH, COLOUR = "◷", "#e67e22"
DRAW_ORDER = 2  # last of the built-ins: a delay avoids the partition window and dead workers
NEEDS_ULFM = False
TOML_FIELDS = {"rank": True, "steps": True, "seconds": True, "where": False}
TOML_DOC = """\
[[delay]]
rank = 1
steps = [3, 4]
seconds = 0.3
where = "compute"                # compute | send"""


@dataclass(frozen=True)
class Delay:
    rank: int
    steps: tuple[int, ...]
    seconds: float
    where: str = "compute"

    kind = NAME

    def text(self) -> str:
        return f"delay {self.rank}@{','.join(map(str, self.steps))} {self.seconds:g}s/{self.where}"


EVENT = Delay


def acts_at(event: Delay) -> str:
    return "before_compute" if event.where == "compute" else "send"


def check_event(event: Delay, n: int) -> None:
    what = event.text()
    check_rank(event.rank, n, what)
    if not event.steps:
        raise ValueError(f"{what}: a delay needs at least one step")
    for s in event.steps:
        check_step(s, what)
    if len(set(event.steps)) != len(event.steps):
        raise ValueError(f"{what}: a step is listed twice")
    if not isinstance(event.seconds, (int, float)) or not 0 < event.seconds <= MAX_DELAY_S:
        raise ValueError(f"{what}: seconds must be in (0, {MAX_DELAY_S:g}]")
    if event.where not in DELAY_WHERE:
        raise ValueError(f"{what}: unknown place {event.where!r} (choose from {', '.join(DELAY_WHERE)})")


def check_schedule(schedule) -> None:
    died = {k.rank: k.step for k in schedule.kills}
    seen: set[tuple[int, int]] = set()
    for d in schedule.delays:
        for s in d.steps:
            if (d.rank, s) in seen:
                raise ValueError(f"{d.text()}: overlaps another delay of rank {d.rank} at step {s}")
            seen.add((d.rank, s))
            if d.rank in died and s >= died[d.rank]:
                raise ValueError(f"{d.text()}: rank {d.rank} is dead by step {s}")


def from_toml(entry: dict, where: str, n: int) -> Delay:
    out = dict(entry)
    out["rank"] = toml_rank(out["rank"], n, where)
    out["steps"] = toml_int_tuple(out["steps"], where, "steps")
    if "where" in out:
        out["where"] = toml_string(out["where"], where, "where")
    out["seconds"] = toml_number(out["seconds"], where, "seconds")
    return Delay(**out)


def to_toml(event: Delay) -> list[str]:
    return [f"rank = {event.rank}", f"steps = {toml_value(list(event.steps))}",
            f"seconds = {toml_value(event.seconds)}", f"where = {toml_str(event.where)}"]


def draw(rng, draft) -> None:
    steps = draft.steps
    for rank in range(draft.world_size):
        if rng.random() < 0.25:
            last = draft.killed_at.get(rank, steps)
            options = [s for s in range(min(last, steps)) if draft.free(s)]
            if not options:
                continue
            chosen = sorted({int(s) for s in rng.choice(options, size=min(2, len(options)), replace=False)})
            draft.events.append(Delay(rank, tuple(chosen), round(float(rng.uniform(0.05, 0.3)), 3),
                                      str(rng.choice(["compute", "send"]))))


# -- the minimiser's moves
def first_step(event: Delay) -> int:
    return min(event.steps)


def last_step(event: Delay) -> int:
    return max(event.steps)


def shrink_moves(event: Delay):
    """One step fewer (each in turn), then every step one earlier."""
    if len(event.steps) > 1:
        for s in event.steps:
            yield replace(event, steps=tuple(x for x in event.steps if x != s))
    if min(event.steps) > 0:
        yield replace(event, steps=tuple(s - 1 for s in event.steps))


def shifted(event: Delay, by: int) -> Delay:
    return replace(event, steps=tuple(s + by for s in event.steps))


def without_worker(event: Delay, gone: int, renumber):
    return None if event.rank == gone else replace(event, rank=renumber(event.rank))


# Its effect is the wrapper's own (mpibench/faults/wrapper.py): see ARCHITECTURE.md, "A fault kind".
on_mark = None
# Its faults.csv rows come from the recovery layer (mpibench/faults/fault_log.py).
log_row = None
