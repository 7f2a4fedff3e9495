"""What every fault kind's module shares: the checks of ranks and steps, the TOML field
readers and writers, and the draft a random schedule is drawn into.

A kind's module (see :mod:`mpibench.faults.kinds`) imports only this module and
the standard library, so an outside kind is one file that imports this one.
"""
from __future__ import annotations

from dataclasses import dataclass, field


# -- validation
def check_rank(rank, n: int, what: str) -> None:
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < n:
        raise ValueError(f"{what}: rank {rank!r} is outside the world of {n} ranks")


def check_step(step, what: str) -> None:
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"{what}: step {step!r} must be a whole number >= 0")


# -- TOML fields (a field a table leaves out is not read)
def toml_rank(value, n: int, where: str) -> int:
    """A rank as written (negative counts from the end: -1 is the last rank)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{where}: rank {value!r} must be a whole number")
    if -n <= value < 0:
        return n + value
    return value  # out-of-range ranks are named by validate()


def toml_int_tuple(value, where: str, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{where}: {what} must be a list of whole numbers")
    return tuple(value)


def toml_whole(value, where: str, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{where}: {what} must be a whole number")
    return value


def toml_string(value, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: {what} must be a string")
    return value


def toml_number(value, where: str, what: str):
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ValueError(f"{where}: {what} must be a number")
    return value


def toml_str(text: str) -> str:
    """``text`` as a TOML string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def toml_value(v) -> str:
    """A number or a (nested) list of numbers as TOML."""
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    return str(v)


# -- random drawing
@dataclass
class Draft:
    """A random schedule while it is drawn: the kinds draw into it one after another
    (in their ``DRAW_ORDER``), each seeing what the earlier ones drew."""

    world_size: int
    steps: int
    events: list = field(default_factory=list)
    window: object = None  # the partition drawn, if any: no kill or delay falls inside it
    killed_at: dict = field(default_factory=dict)  # worker -> the step of its kill

    def free(self, step: int) -> bool:
        return self.window is None or not self.window.active(step)
