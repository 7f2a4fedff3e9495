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

from . import kinds
from .kinds.common import Draft
from .schedule import Schedule, validate


def random_schedule(seed: int, world_size: int, steps: int) -> Schedule:
    """Each kind draws its share in ``DRAW_ORDER`` from one generator (partition window,
    kills, delays, then outside kinds), so a seed gives the same built-in events
    whatever kinds are registered after them."""
    rng = seeds.generator(seed, seeds.SCHEDULE, world_size, steps)
    draft = Draft(world_size, max(steps, 1))
    for kind in sorted(kinds.KINDS, key=lambda k: k.DRAW_ORDER):
        kind.draw(rng, draft)
    return validate(Schedule(f"random-{seed}", world_size, tuple(draft.events)))
