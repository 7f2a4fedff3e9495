"""Pause: worker ``rank`` sleeps ``seconds`` after its reduction at ``step``.

An outside fault kind in one file, as docs/faults.md describes: tests/test_fault_kinds.py copies
it into a temporary package and names it in MPIBENCH_FAULT_KINDS. It imports only
mpibench.faults.kinds.common. Its effect is its own ``on_mark`` (the communicator wrapper calls
it at every phase mark); its ``faults.csv`` row is its ``log_row``.
"""
from dataclasses import dataclass, replace

from mpibench.faults.kinds.common import check_rank, check_step, toml_number, toml_rank, toml_value, toml_whole

NAME = "pause"
GLYPH, COLOUR = "⏸", "#16a085"
DRAW_ORDER = 10
NEEDS_ULFM = False
TOML_FIELDS = {"rank": True, "step": True, "seconds": True}
TOML_DOC = "[[pause]]\nrank = 1\nstep = 2\nseconds = 0.05"


@dataclass(frozen=True)
class Pause:
    rank: int
    step: int
    seconds: float
    kind = NAME

    def text(self):
        return f"pause {self.rank}@{self.step} {self.seconds:g}s"


EVENT = Pause


def acts_at(event):
    return "after_reduce"


def check_event(event, n):
    check_rank(event.rank, n, event.text())
    check_step(event.step, event.text())
    if not 0 < event.seconds <= 1:
        raise ValueError(f"{event.text()}: seconds must be in (0, 1]")


def check_schedule(schedule):
    died = {k.rank: k.step for k in schedule.kills}
    for p in schedule.of_kind(NAME):
        if p.rank in died and p.step >= died[p.rank]:
            raise ValueError(f"{p.text()}: rank {p.rank} is dead by step {p.step}")
        if any(cut.active(p.step) for cut in schedule.partitions):
            raise ValueError(f"{p.text()}: pauses during a partition are not supported")


def from_toml(entry, where, n):
    return Pause(toml_rank(entry["rank"], n, where), toml_whole(entry["step"], where, "step"),
                 toml_number(entry["seconds"], where, "seconds"))


def to_toml(event):
    return [f"rank = {event.rank}", f"step = {event.step}", f"seconds = {toml_value(event.seconds)}"]


def draw(rng, draft):
    # Drawn after the built-in kinds (DRAW_ORDER 10), so their draws stay as they were.
    rank, step = int(rng.integers(0, draft.world_size)), int(rng.integers(0, draft.steps))
    if draft.free(step) and draft.killed_at.get(rank, draft.steps) > step:
        draft.events.append(Pause(rank, step, 0.01))


def first_step(event):
    return event.step


last_step = first_step


def shrink_moves(event):
    if event.step > 0:
        yield replace(event, step=event.step - 1)


def shifted(event, by):
    return replace(event, step=event.step + by)


def without_worker(event, gone, renumber):
    return None if event.rank == gone else replace(event, rank=renumber(event.rank))


def on_mark(event, injector, step, phase):
    # A step tried again after a failure is not paused again.
    done = injector.__dict__.setdefault("pauses_done", set())
    if (injector.worker_id, step, phase) == (event.rank, event.step, "after_reduce") and step not in done:
        done.add(step)
        print(f"pause: worker {event.rank} sleeps {event.seconds:g} s at step {step}", flush=True)
        injector.sleep(event.seconds)


def log_row(event, step):
    return ("after_reduce", event.rank, f"paused {event.seconds:g} s after the reduction") if step == event.step else None
