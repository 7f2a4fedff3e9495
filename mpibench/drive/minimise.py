"""Shrinking a failing fault schedule to a smaller one that still fails.

The search is greedy, in the manner of delta debugging: from the current
(workers, steps, schedule) it proposes simpler candidates in a fixed order
-- fewer steps, one event dropped, every event one step earlier, one event
moved earlier or made shorter, one worker fewer -- and moves to the first
candidate for which ``still_fails`` holds, then starts over from there. It stops when no candidate fails (the
result is then locally minimal: no single simplification keeps the failure)
or when the budget of runs is spent. Candidates that do not validate for
their world size are skipped without a run. Everything here is pure apart
from ``still_fails``, which the sweep backs with a real MPI job.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterator

from mpibench.faults.schedule import Delay, Kill, Partition, Schedule, validate

MIN_WORKERS = 2


@dataclass(frozen=True)
class Candidate:
    workers: int
    steps: int
    schedule: Schedule

    def size(self) -> tuple:
        """What "smaller" means: fewer events, workers, steps, then earlier events."""
        return (len(self.schedule.events), self.workers, self.steps,
                sum(last_step(e) for e in self.schedule.events))


@dataclass
class Shrunk:
    start: Candidate
    minimal: Candidate
    runs: int
    exhausted: bool  # the budget ran out before a local minimum was proven


def last_step(event) -> int:
    if isinstance(event, Kill):
        return event.step
    if isinstance(event, Delay):
        return max(event.steps)
    return event.from_step if event.to_step is None else event.to_step - 1


def first_step(event) -> int:
    if isinstance(event, Kill):
        return event.step
    if isinstance(event, Delay):
        return min(event.steps)
    return event.from_step


# ---------------------------------------------------------------------------- candidates
def with_events(c: Candidate, events, workers: int | None = None, steps: int | None = None) -> Candidate:
    workers = c.workers if workers is None else workers
    schedule = replace(c.schedule, world_size=workers, events=tuple(events))
    return Candidate(workers, c.steps if steps is None else steps, schedule)


def earlier(event) -> Iterator:
    """The event moved earlier, or made shorter or milder, one way at a time."""
    if isinstance(event, Kill):
        if event.step > 0:
            yield replace(event, step=event.step // 2)
            if event.step // 2 != event.step - 1:
                yield replace(event, step=event.step - 1)
        if event.phase == "mid_reduction" and event.messages > 1:
            yield replace(event, messages=event.messages - 1)
    elif isinstance(event, Delay):
        if len(event.steps) > 1:
            for s in event.steps:
                yield replace(event, steps=tuple(x for x in event.steps if x != s))
        if min(event.steps) > 0:
            yield replace(event, steps=tuple(s - 1 for s in event.steps))
    elif isinstance(event, Partition):
        if event.from_step > 0:
            yield replace(event, from_step=event.from_step - 1,
                          to_step=None if event.to_step is None else event.to_step - 1)
        if event.to_step is not None and event.to_step - event.from_step > 1:
            yield replace(event, to_step=event.to_step - 1)


def shifted(event, by: int):
    """``event`` moved ``by`` steps (negative: earlier)."""
    if isinstance(event, Kill):
        return replace(event, step=event.step + by)
    if isinstance(event, Delay):
        return replace(event, steps=tuple(s + by for s in event.steps))
    return replace(event, from_step=event.from_step + by,
                   to_step=None if event.to_step is None else event.to_step + by)


def without_worker(event, gone: int):
    """``event`` in a world without worker ``gone``, higher ranks renumbered down by one.

    None when the event no longer applies (it was about ``gone``, or a cut
    lost a side).
    """
    def renumber(rank: int) -> int:
        return rank - 1 if rank > gone else rank

    if isinstance(event, (Kill, Delay)):
        return None if event.rank == gone else replace(event, rank=renumber(event.rank))
    sides = tuple(tuple(renumber(r) for r in side if r != gone) for side in event.sides)
    sides = tuple(s for s in sides if s)
    return replace(event, sides=sides) if len(sides) >= 2 else None


def simpler(c: Candidate, violation_step: int | None = None) -> Iterator[Candidate]:
    """Simpler variants of ``c``, the most promising first."""
    events = list(c.schedule.events)
    if violation_step is not None and violation_step + 1 < c.steps:
        kept = [e for e in events if first_step(e) <= violation_step]
        yield with_events(c, kept, steps=violation_step + 1)
    for i in range(len(events)):
        yield with_events(c, events[:i] + events[i + 1:])
    if events and min(first_step(e) for e in events) > 0:  # everything earlier, timing kept
        yield with_events(c, [shifted(e, -1) for e in events], steps=c.steps - 1)
    for i, event in enumerate(events):
        for moved in earlier(event):
            yield with_events(c, events[:i] + [moved] + events[i + 1:])
    if c.workers > MIN_WORKERS:
        for gone in range(c.workers - 1, 0, -1):  # worker 0 records the run: it stays
            kept = [e for e in (without_worker(e, gone) for e in events) if e is not None]
            yield with_events(c, kept, workers=c.workers - 1)


def is_valid(c: Candidate) -> bool:
    try:
        validate(c.schedule)
    except ValueError:
        return False
    return all(first_step(e) < c.steps for e in c.schedule.events)


# ---------------------------------------------------------------------------- the search
def shrink(start: Candidate, still_fails: Callable[[Candidate], bool], max_runs: int = 40,
           violation_step: Callable[[Candidate], int | None] | None = None) -> Shrunk:
    """Greedily simplify ``start`` while ``still_fails``; at most ``max_runs`` calls to it.

    ``violation_step``, when given, reports the step of the first violation of
    the last candidate that still failed, so trailing steps can be cut first.
    """
    current, runs, tried = start, 0, set()
    while True:
        step = violation_step(current) if violation_step else None
        for cand in simpler(current, step):
            key = (cand.workers, cand.steps, cand.schedule.events)
            if key in tried or not is_valid(cand):
                continue
            if runs >= max_runs:
                return Shrunk(start, current, runs, exhausted=True)
            tried.add(key)
            runs += 1
            if still_fails(cand):
                current = cand
                break
        else:
            return Shrunk(start, current, runs, exhausted=False)
