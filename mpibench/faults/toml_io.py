"""Schedules to and from TOML.

Layout (ranks may be negative: -1 is the last rank)::

    name = "my-schedule"
    world_size = 4                   # optional; must match the job when given
    [options]                        # optional run options, e.g.
    straggler_deadline = 0.15

followed by one array of tables per fault kind, ``[[NAME]]``, its fields the
kind's own (``TOML_DOC`` of each module in :mod:`.kinds`)::

    [[kill]]
    rank = -1
    step = 2
    phase = "mid_reduction"          # before_compute | mid_reduction | after_reduce | mid_gather | after_apply | recovery
    messages = 2                     # mid_reduction and mid_gather only
    [[delay]]
    rank = 1
    steps = [3, 4]
    seconds = 0.3
    where = "compute"                # compute | send
    [[partition]]
    sides = [[0, 1, 2], [3]]
    from_step = 2
    to_step = 5                      # first healed step; leave out to never heal

Every problem (unknown key or kind, wrong type) becomes a one-line ValueError.
"""
from __future__ import annotations

import os

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from . import kinds
from .kinds.common import toml_str, toml_value
from .schedule import Schedule

OPTION_TYPES = {"straggler_deadline": (int, float), "samples": int, "batch_size": int}


def _top() -> set:
    return {"name", "world_size", "options", *kinds.names()}


def load_file(path: str, world_size: int) -> Schedule:
    if not os.path.isfile(path):
        raise ValueError(f"schedule file {path!r} not found")
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None
    default = os.path.splitext(os.path.basename(path))[0]
    return from_dict(data, world_size, default)


def loads(text: str, world_size: int, default_name: str = "schedule") -> Schedule:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML ({exc})") from None
    return from_dict(data, world_size, default_name)


def from_dict(data: dict, world_size: int, default_name: str) -> Schedule:
    unknown = set(data) - _top()
    if unknown:
        raise ValueError(f"unknown key or event kind {sorted(unknown)[0]!r} "
                         f"(kinds: {', '.join(kinds.names())})")
    name = data.get("name", default_name)
    if not isinstance(name, str):
        raise ValueError("name must be a string")
    declared = data.get("world_size")
    if declared is not None and declared != world_size:
        raise ValueError(f"schedule {name!r} is written for {declared} ranks, the job has {world_size}")
    events = []
    for kind in kinds.KINDS:
        entries = data.get(kind.NAME, [])
        if not isinstance(entries, list):
            raise ValueError(f"{kind.NAME} must be an array of tables ([[{kind.NAME}]])")
        for i, entry in enumerate(entries):
            where = f"{kind.NAME} #{i + 1}"
            _check_fields(kind, where, entry)
            events.append(kind.from_toml(entry, where, world_size))
    return Schedule(name, world_size, tuple(events), _options(data.get("options", {})))


def _check_fields(kind, where: str, entry) -> None:
    """The table holds only ``kind``'s fields and every required one (the kind reads their values)."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: must be a table")
    spec = kind.TOML_FIELDS
    unknown = set(entry) - set(spec)
    if unknown:
        raise ValueError(f"{where}: unknown field {sorted(unknown)[0]!r} (fields: {', '.join(spec)})")
    missing = [f for f, required in spec.items() if required and f not in entry]
    if missing:
        raise ValueError(f"{where}: missing field {missing[0]!r}")


def _options(options) -> tuple:
    if not isinstance(options, dict):
        raise ValueError("options must be a table")
    out = []
    for key, value in options.items():
        if key not in OPTION_TYPES:
            raise ValueError(f"unknown option {key!r} (options: {', '.join(OPTION_TYPES)})")
        if not isinstance(value, OPTION_TYPES[key]) or isinstance(value, bool) or value < 0:
            raise ValueError(f"option {key} must be a non-negative number")
        out.append((key, value))
    return tuple(out)


def dump(schedule: Schedule) -> str:
    """TOML text that :func:`loads` turns back into ``schedule``."""
    lines = [f"name = {toml_str(schedule.name)}", f"world_size = {schedule.world_size}"]
    if schedule.options:
        lines += ["", "[options]"] + [f"{k} = {toml_value(v)}" for k, v in schedule.options]
    for e in schedule.events:
        lines += ["", f"[[{e.kind}]]"] + kinds.of(e).to_toml(e)
    return "\n".join(lines) + "\n"
