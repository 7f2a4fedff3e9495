"""``coverage``: every reduced or served buffer is covered exactly by its pieces' offsets."""
from __future__ import annotations

NAME = "coverage"


def gap(pieces, total: int) -> str | None:
    """What is wrong with ``pieces`` as an exact cover of ``[0, total)``, or None."""
    cursor = 0
    for offset, length in sorted(pieces):
        if length == 0 and 0 <= offset <= total:
            continue
        if offset < 0 or length < 0 or offset + length > total:
            return f"piece ({offset}, {length}) outside [0, {total})"
        if offset > cursor:
            return f"gap [{cursor}, {offset})"
        if offset < cursor:
            return f"overlap at {offset}"
        cursor = offset + length
    if cursor != total:
        return f"pieces end at {cursor} of {total}"
    return None


def check(case, view):
    checked = 0
    for a in sorted(view.active, key=lambda a: a.worker):
        if a.pieces is None:
            continue
        problem = gap(a.pieces, a.total_length)
        if problem:
            return False, f"worker {a.worker}: {problem}"
        checked += 1
    return True, f"{checked} buffers covered exactly ({view.agreed.total_length} elements)"
