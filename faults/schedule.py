"""Fault schedules as plain data, by scenario name or from a TOML file."""
from __future__ import annotations

from dataclasses import dataclass, field

SCENARIOS = {
    "none": "no faults: every worker contributes every step",
}


@dataclass(frozen=True)
class Schedule:
    name: str
    events: tuple = field(default_factory=tuple)


def load_schedule(name: str, world_size: int, seed: int) -> Schedule:
    if name in SCENARIOS:
        return Schedule(name)
    raise ValueError(f"unknown scenario {name!r} (see 'python -m mpibench scenarios')")
