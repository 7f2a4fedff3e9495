"""Schedules to and from TOML.

Layout (ranks may be negative: -1 is the last rank)::

    name = "my-schedule"
    world_size = 4                   # optional; must match the job when given
    [options]                        # optional run options, e.g.
    straggler_deadline = 0.15
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

from .schedule import Delay, Kill, Partition, Schedule

KINDS = {"kill": Kill, "delay": Delay, "partition": Partition}
FIELDS = {
    "kill": {"rank": True, "step": True, "phase": False, "messages": False},
    "delay": {"rank": True, "steps": True, "seconds": True, "where": False},
    "partition": {"sides": True, "from_step": True, "to_step": False},
}
OPTION_TYPES = {"straggler_deadline": (int, float), "samples": int, "batch_size": int}
TOP = {"name", "world_size", "options", *KINDS}


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
    unknown = set(data) - TOP
    if unknown:
        raise ValueError(f"unknown key or event kind {sorted(unknown)[0]!r} "
                         f"(kinds: {', '.join(KINDS)})")
    name = data.get("name", default_name)
    if not isinstance(name, str):
        raise ValueError("name must be a string")
    declared = data.get("world_size")
    if declared is not None and declared != world_size:
        raise ValueError(f"schedule {name!r} is written for {declared} ranks, the job has {world_size}")
    events = []
    for kind, cls in KINDS.items():
        entries = data.get(kind, [])
        if not isinstance(entries, list):
            raise ValueError(f"{kind} must be an array of tables ([[{kind}]])")
        for i, entry in enumerate(entries):
            events.append(cls(**_fields(kind, i, entry, world_size)))
    return Schedule(name, world_size, tuple(events), _options(data.get("options", {})))


def _fields(kind: str, index: int, entry, n: int) -> dict:
    where = f"{kind} #{index + 1}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: must be a table")
    spec = FIELDS[kind]
    unknown = set(entry) - set(spec)
    if unknown:
        raise ValueError(f"{where}: unknown field {sorted(unknown)[0]!r} (fields: {', '.join(spec)})")
    missing = [f for f, required in spec.items() if required and f not in entry]
    if missing:
        raise ValueError(f"{where}: missing field {missing[0]!r}")
    out = dict(entry)
    if "rank" in out:
        out["rank"] = _rank(out["rank"], n, where)
    if "steps" in out:
        out["steps"] = _int_tuple(out["steps"], where, "steps")
    if "sides" in out:
        if not isinstance(out["sides"], list):
            raise ValueError(f"{where}: sides must be a list of rank lists")
        out["sides"] = tuple(tuple(_rank(r, n, where) for r in _int_tuple(s, where, "sides"))
                             for s in out["sides"])
    for name in ("step", "from_step", "to_step", "messages"):
        if name in out and (not isinstance(out[name], int) or isinstance(out[name], bool)):
            raise ValueError(f"{where}: {name} must be a whole number")
    for name in ("phase", "where"):
        if name in out and not isinstance(out[name], str):
            raise ValueError(f"{where}: {name} must be a string")
    if "seconds" in out and (not isinstance(out["seconds"], (int, float)) or isinstance(out["seconds"], bool)):
        raise ValueError(f"{where}: seconds must be a number")
    return out


def _rank(value, n: int, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{where}: rank {value!r} must be a whole number")
    if -n <= value < 0:
        return n + value
    return value  # out-of-range ranks are named by validate()


def _int_tuple(value, where: str, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{where}: {what} must be a list of whole numbers")
    return tuple(value)


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
    lines = [f"name = {_str(schedule.name)}", f"world_size = {schedule.world_size}"]
    if schedule.options:
        lines += ["", "[options]"] + [f"{k} = {_value(v)}" for k, v in schedule.options]
    for e in schedule.events:
        lines += ["", f"[[{e.kind}]]"]
        if isinstance(e, Kill):
            lines += [f"rank = {e.rank}", f"step = {e.step}", f"phase = {_str(e.phase)}",
                      f"messages = {e.messages}"]
        elif isinstance(e, Delay):
            lines += [f"rank = {e.rank}", f"steps = {_value(list(e.steps))}",
                      f"seconds = {_value(e.seconds)}", f"where = {_str(e.where)}"]
        else:
            lines += [f"sides = {_value([list(s) for s in e.sides])}", f"from_step = {e.from_step}"]
            if e.to_step is not None:
                lines.append(f"to_step = {e.to_step}")
    return "\n".join(lines) + "\n"


def _str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    return str(v)
