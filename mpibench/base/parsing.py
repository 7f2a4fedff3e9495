"""How values given on a command line or in the environment are read: lists and sizes.

One reader of each, so that ``--workers 2,3``, ``--strategies ring,ps``,
``--sizes 4K,1M`` and ``MPIBENCH_STRATEGIES`` accept and refuse the same
spellings everywhere, with the same one-line message.
"""
from __future__ import annotations

import math

from .config import UsageError

_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_list(text: str, what: str, cast=str) -> tuple:
    """``"a, b,,c"`` -> ``("a", "b", "c")``, each item passed through ``cast``.

    Empty items are skipped; an empty list, or an item ``cast`` refuses, is a
    :class:`UsageError` naming ``what`` (the option or variable)."""
    try:
        items = tuple(cast(x.strip()) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"cannot read {what} {text!r} (a comma-separated list)") from None
    if not items:
        raise UsageError(f"{what} must name at least one value")
    return items


def parse_size(text: str) -> int:
    """``4K``, ``1M``, ``16MiB``, ``512`` -> bytes (binary multiples)."""
    spelled = text.strip().upper().removesuffix("IB").removesuffix("B")
    number, unit = (spelled[:-1], spelled[-1]) if spelled and spelled[-1] in "KMG" else (spelled, "")
    try:
        value = float(number) * _SIZE_UNITS[unit]
    except ValueError:
        raise UsageError(f"cannot read size {text!r} (examples: 4K, 1M, 16M, 512)") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise UsageError(f"size {text!r} must be a whole, non-negative number of bytes")
    return int(value)
