"""The SMPI cross-check's table: rows merged into one CSV by several launches, and printed.

Used by ``lab/studies/smpi_crosscheck.py``; every figure in it is simulated.
"""
from __future__ import annotations

import csv
import fcntl
import math
import os
from collections import Counter
from pathlib import Path

COLUMNS = ["date", "platform", "placement", "ranks", "ranks_per_node", "strategy", "smpi_algorithm", "bytes",
           "smpi_s", "smpi_lo_s", "smpi_hi_s", "calls", "launches", "predicted_s", "ratio", "smpi_wall_s",
           "note", "tag"]


def show(rows: list[dict]) -> None:
    print(f"{'p':>5} {'strategy':<13} {'smpi':<13} {'bytes':>9} {'SMPI us':>11} {'predicted us':>12} "
          f"{'ratio':>6}  note   (all simulated)")
    for r in rows:
        smpi = f"{r['smpi_s'] * 1e6:>11.2f}" if r["smpi_s"] != "" else f"{'-':>11}"
        ratio = f"{r['ratio']:>6.2f}" if r["ratio"] != "" else f"{'-':>6}"
        print(f"{r['ranks']:>5} {r['strategy']:<13} {r['smpi_algorithm']:<13} {r['bytes']:>9} "
              f"{smpi} {r['predicted_s'] * 1e6:>12.2f} {ratio}  {r['note']}")


_KEY = ("platform", "placement", "ranks", "strategy", "smpi_algorithm", "bytes")


def key(*values) -> tuple:
    """A case's identity: (platform, placement, ranks, strategy, SMPI algorithm, bytes)."""
    return tuple(map(str, values))


def _key(row: dict) -> tuple:
    return key(*(row[k] for k in _KEY))


def finished(path: Path) -> frozenset:
    """The cases ``path`` holds an SMPI figure for (none when it does not exist)."""
    if not path.exists():
        return frozenset()
    with path.open(newline="") as f:
        return frozenset(_key(r) for r in csv.DictReader(f) if r.get("smpi_s"))


def wall_trend(path: Path, case: tuple) -> str:
    """For a case (:func:`key`) SMPI did not finish: its wall seconds at the two largest smaller p
    that ``path`` holds a figure for (same platform, placement, algorithm and size), carried on to
    this p at the growth of that last step, p**e; '' with fewer than two such rows."""
    if not path.exists():
        return ""
    platform, placement, ranks, strategy, algorithm, nbytes = case
    with path.open(newline="") as f:
        alike = [r for r in csv.DictReader(f) if r["smpi_s"] and r["smpi_wall_s"]
                 and _key(r)[:2] + _key(r)[3:5] == (platform, placement, strategy, algorithm)]
    # a wall time that several sizes share is a whole launch's (rows from before one launch per size)
    launches = Counter((r["ranks"], r["smpi_wall_s"]) for r in alike)
    walls = sorted((int(r["ranks"]), float(r["smpi_wall_s"])) for r in alike if r["bytes"] == nbytes
                   and int(r["ranks"]) < int(ranks) and launches[r["ranks"], r["smpi_wall_s"]] == 1)
    if len(walls) < 2 or walls[-2][0] == walls[-1][0]:
        return ""
    (p1, w1), (p2, w2) = walls[-2:]
    growth = math.log(w2 / w1) / math.log(p2 / p1)
    seen = ", ".join(f"{w:.1f} s at p = {p}" for p, w in walls)
    return (f"SMPI's wall time for this case: {seen}; at p**{growth:.2f} (the last step) "
            f"about {w2 * (int(ranks) / p2) ** growth:,.0f} s at p = {ranks} (extrapolated)")


def write(path: Path, rows: list[dict]) -> None:
    """Write ``rows``, keeping the file's earlier rows for (platform, placement, ranks, strategy,
    SMPI algorithm, bytes) not run this time, so that a long table can be filled in by several runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY)  # several launches may fill one table at once
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        _merge(path, rows)
    finally:
        os.close(folder)  # and with it the lock


def _merge(path: Path, rows: list[dict]) -> None:
    fresh = {_key(r) for r in rows}
    kept = []
    if path.exists():
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames == COLUMNS:
                kept = [r for r in reader if _key(r) not in fresh]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        for r in kept + [{k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()} for r in rows]:
            w.writerow(r)


def renote(path: Path, platform_name: str, notes_for) -> int:
    """Add to the rows of ``platform_name`` in ``path`` the notes ``notes_for(strategy, ranks, bytes)``
    ("; "-separated) gives and they lack; the figures stay as they are."""
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["platform"] == platform_name]
    for r in rows:
        have = [n for n in r["note"].split("; ") if n]
        wanted = notes_for(r["strategy"], int(r["ranks"]), int(r["bytes"])).split("; ")
        r["note"] = "; ".join([n for n in wanted if n and n not in have] + have)
    write(path, rows)
    return 0
