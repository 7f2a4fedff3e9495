"""Sizes as people read them, shared by the bench lines and the offline tables."""
from __future__ import annotations


def human_bytes(n: int) -> str:
    """4096 -> '4 KiB', 1536 -> '1.5 KiB', 100 -> '100 B' (binary multiples)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"
