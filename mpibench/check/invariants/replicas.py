"""``replicas``: every committing member holds the same parameters; a stalled one kept its own."""
from __future__ import annotations

NAME = "replicas"


def check(case, view):
    groups: dict[str, list[int]] = {}
    for a in view.active:
        groups.setdefault(a.params_after, []).append(a.worker)
    if len(groups) > 1:
        parts = "; ".join(f"{d[:12]}: {' '.join(map(str, sorted(ws)))}" for d, ws in sorted(groups.items()))
        return False, f"parameters differ after the commit: {parts}"
    moved = sorted(a.worker for a in view.commits if a.role == "stall" and a.params_after != a.params_before)
    if moved:
        return False, f"stalled worker(s) {' '.join(map(str, moved))} changed their parameters"
    stalled = sum(1 for a in view.commits if a.role == "stall")
    return True, f"{len(view.active)} replicas identical" + (f"; {stalled} stalled kept theirs" if stalled else "")
