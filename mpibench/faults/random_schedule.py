"""Random fault schedules for the sweep: a pure function of (seed, world size, steps).

The mix covers every kind: kills at every phase (including a second kill
during recovery), stragglers that compute or send late, and partitions that
heal. Kills and partition sides are drawn from every worker, worker 0
included; at least one worker always survives and no kill or delay falls
inside a partition window, so every schedule drawn here passes
:func:`~.schedule.validate`.
"""
from __future__ import annotations

from mpibench.base import seeds

from .schedule import PHASES, Delay, Kill, Partition, Schedule, validate


def random_schedule(seed: int, world_size: int, steps: int) -> Schedule:
    rng = seeds.generator(seed, seeds.SCHEDULE, world_size, steps)
    n, events = world_size, []
    steps = max(steps, 1)
    window = None
    if n >= 3 and steps >= 4 and rng.random() < 0.5:
        window = _partition(rng, n, steps)
        events.append(window)

    def free(step: int) -> bool:
        return window is None or not window.active(step)

    candidates = list(range(n))
    rng.shuffle(candidates)
    max_kills = min(len(candidates) - 1, int(rng.integers(0, 3)))  # someone survives
    killed_at: dict[int, int] = {}
    for rank in candidates[:max_kills]:
        step = int(rng.integers(0, steps))
        if not free(step):
            continue
        phase = str(rng.choice([p for p in PHASES if p != "recovery"]))
        if killed_at and rng.random() < 0.5:
            first = next(iter(killed_at.values()))
            step, phase = first, "recovery"
        killed_at[rank] = step
        events.append(Kill(rank, step, phase, int(rng.integers(1, 4))))
    for rank in range(n):
        if rng.random() < 0.25:
            last = killed_at.get(rank, steps)
            options = [s for s in range(min(last, steps)) if free(s)]
            if not options:
                continue
            chosen = sorted({int(s) for s in rng.choice(options, size=min(2, len(options)), replace=False)})
            events.append(Delay(rank, tuple(chosen), round(float(rng.uniform(0.05, 0.3)), 3),
                                str(rng.choice(["compute", "send"]))))
    return validate(Schedule(f"random-{seed}", n, tuple(events)))


def _partition(rng, n: int, steps: int) -> Partition:
    start = int(rng.integers(1, steps - 2))
    end = int(rng.integers(start + 1, min(steps, start + 3) + 1))
    everyone = list(range(n))
    rng.shuffle(everyone)
    if rng.random() < 0.25 and n % 2 == 0:
        majority = everyone[:n // 2]  # halves: no majority anywhere
    else:
        majority = everyone[:n // 2 + 1]  # a strict majority, worker 0 on it or not
    minority = sorted(set(range(n)) - set(majority))
    return Partition((tuple(sorted(majority)), tuple(minority)), start, end)
