"""Kill: a worker's process is SIGKILLed at ``step`` in ``phase``.

Phases: ``before_compute``, ``mid_reduction`` after ``messages`` data-plane
messages, ``after_reduce`` before the update is applied, ``mid_gather`` after
``messages`` messages sent after the update began (a sharded strategy's
all-gather; where none are sent it fires at after_apply), ``after_apply``, or
``recovery``: while the survivors recover from another kill at that step.
The wrapper (:class:`mpibench.faults.wrapper.Injector`) carries it out: its
phase marks and its message count decide the moment.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .common import check_rank, check_step, toml_rank, toml_str, toml_string, toml_whole

NAME = "kill"
PHASES = ("before_compute", "mid_reduction", "after_reduce", "after_apply", "recovery")
# Kill phases beyond PHASES (kept apart so the random schedules draw as before).
KILL_PHASES = PHASES + ("mid_gather",)
COUNTED = ("mid_reduction", "mid_gather")  # the phases that count messages
GLYPH, COLOUR = "✕", "#c0392b"
DRAW_ORDER = 1  # after the partition window, before the delays
NEEDS_ULFM = True  # survivors must shrink or respawn: process-fault tolerance
TOML_FIELDS = {"rank": True, "step": True, "phase": False, "messages": False}
TOML_DOC = """\
[[kill]]
rank = -1
step = 2
phase = "mid_reduction"          # before_compute | mid_reduction | after_reduce | mid_gather | after_apply | recovery
messages = 2                     # mid_reduction and mid_gather only"""


@dataclass(frozen=True)
class Kill:
    rank: int
    step: int
    phase: str = "before_compute"
    messages: int = 1  # mid_reduction: die after this many data-plane messages

    kind = NAME

    def text(self) -> str:
        extra = f" after {self.messages} msg" if self.phase in COUNTED else ""
        return f"kill {self.rank}@{self.step}/{self.phase}{extra}"


EVENT = Kill


def acts_at(event: Kill) -> str:
    return event.phase


def check_event(event: Kill, n: int) -> None:
    what = event.text()
    check_rank(event.rank, n, what)
    check_step(event.step, what)
    if event.phase not in KILL_PHASES:
        raise ValueError(f"{what}: unknown phase {event.phase!r} (choose from {', '.join(KILL_PHASES)})")
    if not isinstance(event.messages, int) or event.messages < 1:
        raise ValueError(f"{what}: messages must be a whole number >= 1")


def check_schedule(schedule) -> None:
    kills = schedule.kills
    ranks = [k.rank for k in kills]
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"schedule {schedule.name!r}: a rank is killed twice")
    if len(set(ranks)) >= schedule.world_size:
        raise ValueError(f"schedule {schedule.name!r} would kill every rank")
    for k in kills:
        if k.phase == "recovery" and not any(o.step == k.step and o.phase != "recovery" for o in kills):
            raise ValueError(f"{k.text()}: dying during recovery needs another kill at step {k.step}")


def from_toml(entry: dict, where: str, n: int) -> Kill:
    out = dict(entry)
    out["rank"] = toml_rank(out["rank"], n, where)
    for name in ("step", "messages"):
        if name in out:
            out[name] = toml_whole(out[name], where, name)
    if "phase" in out:
        out["phase"] = toml_string(out["phase"], where, "phase")
    return Kill(**out)


def to_toml(event: Kill) -> list[str]:
    return [f"rank = {event.rank}", f"step = {event.step}", f"phase = {toml_str(event.phase)}",
            f"messages = {event.messages}"]


def draw(rng, draft) -> None:
    candidates = list(range(draft.world_size))
    rng.shuffle(candidates)
    max_kills = min(len(candidates) - 1, int(rng.integers(0, 3)))  # someone survives
    for rank in candidates[:max_kills]:
        step = int(rng.integers(0, draft.steps))
        if not draft.free(step):
            continue
        phase = str(rng.choice([p for p in PHASES if p != "recovery"]))
        if draft.killed_at and rng.random() < 0.5:
            first = next(iter(draft.killed_at.values()))
            step, phase = first, "recovery"
        draft.killed_at[rank] = step
        draft.events.append(Kill(rank, step, phase, int(rng.integers(1, 4))))


# -- the minimiser's moves
def first_step(event: Kill) -> int:
    return event.step


def last_step(event: Kill) -> int:
    return event.step


def shrink_moves(event: Kill):
    """Earlier (half way, then one step), then fewer messages before dying."""
    if event.step > 0:
        yield replace(event, step=event.step // 2)
        if event.step // 2 != event.step - 1:
            yield replace(event, step=event.step - 1)
    if event.phase == "mid_reduction" and event.messages > 1:
        yield replace(event, messages=event.messages - 1)


def shifted(event: Kill, by: int) -> Kill:
    return replace(event, step=event.step + by)


def without_worker(event: Kill, gone: int, renumber):
    return None if event.rank == gone else replace(event, rank=renumber(event.rank))


# Its effect is the wrapper's own (mpibench/faults/wrapper.py): see ARCHITECTURE.md, "A fault kind".
on_mark = None
# Its faults.csv rows come from the recovery layer (mpibench/faults/fault_log.py).
log_row = None
