"""The named scenarios, written relative to the world size.

Each scenario is a function of the world size ``n`` (``last`` is worker
``n - 1``; a minority side is the last ``(n - 1) // 2`` workers) so the same
name means the same story at every size where it makes sense, and sizes where
it does not are refused with a one-line reason.
"""
from __future__ import annotations

from .schedule import Delay, Kill, Partition, Schedule

# name -> (one-line description, smallest world size)
SCENARIOS: dict[str, tuple[str, int]] = {
    "none": ("no faults: every worker contributes every step", 1),
    "short-epochs": ("no faults, tiny shards: epochs end on short batches every few steps", 1),
    "kill-before-compute": ("the last worker is SIGKILLed at step 2 before computing", 2),
    "kill-mid-reduction": ("the last worker is SIGKILLed at step 2 after 2 messages of the reduction", 2),
    "kill-after-reduce": ("the last worker is SIGKILLed at step 2 after the reduction, before applying", 2),
    "kill-after-apply": ("the last worker is SIGKILLed at step 2 after applying, before the commit", 2),
    "kill-ps-server": ("the last worker dies at step 2 while serving its parameter shard (first message)", 2),
    "cascade": ("two kills at step 2: the last worker mid-reduction, the one before it during recovery", 3),
    "straggler": ("the last worker computes 0.3 s late at steps 1-2; everyone waits", 2),
    "straggler-dropped": ("the last worker is 0.6 s late at steps 1-2; a 0.15 s deadline drops it "
                          "from those steps only", 2),
    "partition-minority": ("from step 1 on, a minority (the last (n-1)//2 workers) is cut off for good "
                           "and stalls", 3),
    "partition-heal": ("a minority is cut off at steps 1-2, stalls, then re-syncs and rejoins at step 3", 3),
    "split-brain": ("steps 1-2 split the workers so that no side holds a majority: nothing commits "
                    "until the cut heals at step 3", 2),
    "kill-coordinator": ("worker 0 (first rank: it writes the records) is SIGKILLed at step 2 after 2 "
                         "messages of the reduction", 2),
    "partition-coordinator-minority": ("worker 0 and the last (n-3)//2 workers are cut off at steps 1-2, "
                                       "stall, then re-sync from the majority and rejoin at step 3", 3),
}


def minority(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    cut = (n - 1) // 2
    return tuple(range(n - cut)), tuple(range(n - cut, n))


def coordinator_minority(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Worker 0 on the minority side (with the last (n-3)//2 workers), the rest a majority."""
    small = (0,) + tuple(range(n - (n - 3) // 2, n)) if n > 3 else (0,)
    return tuple(w for w in range(n) if w not in small), small


def no_majority(n: int) -> tuple[tuple[int, ...], ...]:
    """Sides of which none holds a strict majority (halves; thirds when n is odd)."""
    if n % 2 == 0:
        return tuple(range(n // 2)), tuple(range(n // 2, n))
    third = n // 3 + (1 if n % 3 else 0)
    return tuple(range(third)), tuple(range(third, 2 * third)), tuple(range(2 * third, n))


def _events(name: str, n: int):
    last = n - 1
    if name in ("none", "short-epochs"):
        return ()
    if name == "kill-before-compute":
        return (Kill(last, 2, "before_compute"),)
    if name == "kill-mid-reduction":
        return (Kill(last, 2, "mid_reduction", messages=2),)
    if name == "kill-after-reduce":
        return (Kill(last, 2, "after_reduce"),)
    if name == "kill-after-apply":
        return (Kill(last, 2, "after_apply"),)
    if name == "kill-ps-server":
        return (Kill(last, 2, "mid_reduction", messages=1),)
    if name == "cascade":
        return (Kill(last, 2, "mid_reduction", messages=1), Kill(last - 1, 2, "recovery"))
    if name == "straggler":
        return (Delay(last, (1, 2), 0.3, "compute"),)
    if name == "straggler-dropped":
        return (Delay(last, (1, 2), 0.6, "compute"),)
    if name == "partition-minority":
        return (Partition(minority(n), 1, None),)
    if name == "partition-heal":
        return (Partition(minority(n), 1, 3),)
    if name == "split-brain":
        return (Partition(no_majority(n), 1, 3),)
    if name == "kill-coordinator":
        return (Kill(0, 2, "mid_reduction", messages=2),)
    if name == "partition-coordinator-minority":
        return (Partition(coordinator_minority(n), 1, 3),)
    raise ValueError(f"unknown scenario {name!r}")


OPTIONS = {
    "straggler-dropped": (("straggler_deadline", 0.15),),
}


def _options(name: str, n: int):
    if name == "short-epochs":
        # About 20 samples a worker in batches of 8: an epoch lasts 2-4 steps and ends short.
        return (("samples", 20 * n), ("batch_size", 8))
    return OPTIONS.get(name, ())


# The sharded path's own stories (for strategies that declare a sharding_kind; kept out of SCENARIOS,
# which the main job runs under every strategy): under a replicated strategy no message follows
# the update, so a mid_gather kill fires after applying.
SHARDED_SCENARIOS: dict[str, tuple[str, int]] = {
    "kill-mid-scatter": ("the last worker is SIGKILLed at step 2 after 1 message of the reduce-scatter", 2),
    "kill-in-sharded-step": ("the last worker, the only owner of its shard, is SIGKILLed at step 2 "
                             "after the reduce-scatter, before stepping its shard", 2),
    "kill-mid-gather": ("the last worker is SIGKILLed at step 2 after 1 message of the all-gather", 2),
    "kill-owner-0-mid-gather": ("worker 0 (owner of shard 0) is SIGKILLed at step 2 after 1 message "
                                "of the all-gather", 2),
}
ALL_SCENARIOS = {**SCENARIOS, **SHARDED_SCENARIOS}


def _sharded_events(name: str, n: int):
    last = n - 1
    return {"kill-mid-scatter": (Kill(last, 2, "mid_reduction", messages=1),),
            "kill-in-sharded-step": (Kill(last, 2, "after_reduce"),),
            "kill-mid-gather": (Kill(last, 2, "mid_gather", messages=1),),
            "kill-owner-0-mid-gather": (Kill(0, 2, "mid_gather", messages=1),)}[name]


def build(name: str, world_size: int) -> Schedule:
    description, smallest = ALL_SCENARIOS[name]
    if world_size < smallest:
        raise ValueError(f"scenario {name!r} needs at least {smallest} ranks, got {world_size}")
    events = _sharded_events(name, world_size) if name in SHARDED_SCENARIOS else _events(name, world_size)
    return Schedule(name, world_size, events, _options(name, world_size))


def describe() -> list[str]:
    """One line per scenario, for ``python -m mpibench scenarios``."""
    width = max(len(n) for n in ALL_SCENARIOS)
    return [f"{name:<{width}}  {text} (from {smallest} ranks)" for name, (text, smallest) in ALL_SCENARIOS.items()]
