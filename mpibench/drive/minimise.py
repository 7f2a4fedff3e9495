"""Shrinking a failing fault schedule to a smaller one that still fails.

The search is greedy, in the manner of delta debugging: from the current
(workers, steps, schedule) it proposes simpler candidates in a fixed order
-- fewer steps, one event dropped, every event one step earlier, one event
moved earlier or made shorter, one worker fewer -- and moves to the first
candidate for which ``still_fails`` holds, then starts over from there. It stops when no candidate fails (the
result is then locally minimal: no single simplification keeps the failure)
or when the budget of runs is spent. Candidates that do not validate for
their world size are skipped without a run. Everything here is pure apart
from ``still_fails``, which the sweep backs with a real MPI job. The moves of one
event are its kind's (``shrink_moves``, ``shifted``, ``without_worker`` in
:mod:`mpibench.faults.kinds`): the search itself knows no kind.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterator

from mpibench.faults import kinds
from mpibench.faults.schedule import Schedule, validate

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
    return kinds.of(event).last_step(event)


def first_step(event) -> int:
    return kinds.of(event).first_step(event)


# ---------------------------------------------------------------------------- candidates
def with_events(c: Candidate, events, workers: int | None = None, steps: int | None = None) -> Candidate:
    workers = c.workers if workers is None else workers
    schedule = replace(c.schedule, world_size=workers, events=tuple(events))
    return Candidate(workers, c.steps if steps is None else steps, schedule)


def earlier(event) -> Iterator:
    """The event moved earlier, or made shorter or milder, one way at a time (its kind's moves)."""
    yield from kinds.of(event).shrink_moves(event)


def shifted(event, by: int):
    """``event`` moved ``by`` steps (negative: earlier)."""
    return kinds.of(event).shifted(event, by)


def without_worker(event, gone: int):
    """``event`` in a world without worker ``gone``, higher ranks renumbered down by one.

    None when the event no longer applies (it was about ``gone``, or a cut
    lost a side).
    """
    def renumber(rank: int) -> int:
        return rank - 1 if rank > gone else rank

    return kinds.of(event).without_worker(event, gone, renumber)


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
