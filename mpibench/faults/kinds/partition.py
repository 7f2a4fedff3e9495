"""Partition (a cut): from ``from_step`` up to (not including) ``to_step``,
data-plane messages between ``sides`` fail; ``to_step=None`` never heals.

The wrapper (:class:`mpibench.faults.wrapper.FaultComm`) refuses a message
across the cut; which side commits, who stalls and the re-sync once healed are
the recovery layer's (:mod:`mpibench.faults.sides`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .common import check_rank, check_step, toml_int_tuple, toml_rank, toml_value, toml_whole

NAME = "partition"
GLYPH, COLOUR = "∥", "#8e44ad"
DRAW_ORDER = 0  # first: kills and delays are drawn outside its window
NEEDS_ULFM = False
TOML_FIELDS = {"sides": True, "from_step": True, "to_step": False}
TOML_DOC = """\
[[partition]]
sides = [[0, 1, 2], [3]]
from_step = 2
to_step = 5                      # first healed step; leave out to never heal"""


@dataclass(frozen=True)
class Partition:
    sides: tuple[tuple[int, ...], ...]
    from_step: int
    to_step: int | None = None  # first healed step; None: never heals

    kind = NAME

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


EVENT = Partition


def acts_at(event: Partition) -> str:
    return "data_plane"  # every message of the steps it spans


def check_event(event: Partition, n: int) -> None:
    what = event.text()
    check_step(event.from_step, what)
    if event.to_step is not None:
        check_step(event.to_step, what)
        if event.to_step <= event.from_step:
            raise ValueError(f"{what}: to_step must come after from_step")
    if len(event.sides) < 2 or any(len(s) == 0 for s in event.sides):
        raise ValueError(f"{what}: needs at least two non-empty sides")
    everyone = [r for side in event.sides for r in side]
    for r in everyone:
        check_rank(r, n, what)
    if len(set(everyone)) != len(everyone):
        raise ValueError(f"{what}: a rank is on two sides")
    if sorted(everyone) != list(range(n)):
        raise ValueError(f"{what}: sides must cover every rank 0..{n - 1}")


def check_schedule(schedule) -> None:
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


def from_toml(entry: dict, where: str, n: int) -> Partition:
    out = dict(entry)
    if not isinstance(out["sides"], list):
        raise ValueError(f"{where}: sides must be a list of rank lists")
    out["sides"] = tuple(tuple(toml_rank(r, n, where) for r in toml_int_tuple(s, where, "sides"))
                         for s in out["sides"])
    for name in ("from_step", "to_step"):
        if name in out:
            out[name] = toml_whole(out[name], where, name)
    return Partition(**out)


def to_toml(event: Partition) -> list[str]:
    lines = [f"sides = {toml_value([list(s) for s in event.sides])}", f"from_step = {event.from_step}"]
    if event.to_step is not None:
        lines.append(f"to_step = {event.to_step}")
    return lines


def draw(rng, draft) -> None:
    n, steps = draft.world_size, draft.steps
    if not (n >= 3 and steps >= 4 and rng.random() < 0.5):
        return
    start = int(rng.integers(1, steps - 2))
    end = int(rng.integers(start + 1, min(steps, start + 3) + 1))
    everyone = list(range(n))
    rng.shuffle(everyone)
    if rng.random() < 0.25 and n % 2 == 0:
        majority = everyone[:n // 2]  # halves: no majority anywhere
    else:
        majority = everyone[:n // 2 + 1]  # a strict majority, worker 0 on it or not
    minority = sorted(set(range(n)) - set(majority))
    draft.window = Partition((tuple(sorted(majority)), tuple(minority)), start, end)
    draft.events.append(draft.window)


# -- the minimiser's moves
def first_step(event: Partition) -> int:
    return event.from_step


def last_step(event: Partition) -> int:
    return event.from_step if event.to_step is None else event.to_step - 1


def shrink_moves(event: Partition):
    """The whole window one step earlier, then one step shorter."""
    if event.from_step > 0:
        yield replace(event, from_step=event.from_step - 1,
                      to_step=None if event.to_step is None else event.to_step - 1)
    if event.to_step is not None and event.to_step - event.from_step > 1:
        yield replace(event, to_step=event.to_step - 1)


def shifted(event: Partition, by: int) -> Partition:
    return replace(event, from_step=event.from_step + by,
                   to_step=None if event.to_step is None else event.to_step + by)


def without_worker(event: Partition, gone: int, renumber):
    """The cut without ``gone``; None when a side is left empty (then there is no cut)."""
    sides = tuple(tuple(renumber(r) for r in side if r != gone) for side in event.sides)
    sides = tuple(s for s in sides if s)
    return replace(event, sides=sides) if len(sides) >= 2 else None


# Its effect is the wrapper's own (mpibench/faults/wrapper.py): see ARCHITECTURE.md, "A fault kind".
on_mark = None
# Its faults.csv rows come from the recovery layer (mpibench/faults/fault_log.py).
log_row = None
