"""The findings ledger (FINDINGS.toml at the top of the source tree), read into frozen records.

The ledger is versioned with the code: every defect the suite, its tests and its
analysis surfaced, how it was found, how to replay it, and whether and where it
was fixed. The report renders it beside the run's own findings.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

LEDGER = Path(__file__).resolve().parents[1] / "FINDINGS.toml"
FIELDS = ("id", "title", "area", "found_by", "replay", "status", "where")
STATUSES = ("open", "worked around", "fixed")


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    area: str
    found_by: str
    replay: str
    status: str
    where: str


def read(path: Path = LEDGER) -> list[Finding]:
    """The ledger's findings in file order; ValueError naming the entry when one is malformed."""
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    found = []
    for i, entry in enumerate(data.get("finding", [])):
        absent = [f for f in FIELDS if not isinstance(entry.get(f), str)]
        if absent:
            raise ValueError(f"{path}: finding {i + 1} has no {', '.join(absent)}")
        if entry["status"] not in STATUSES:
            raise ValueError(f"{path}: finding {entry['id']!r} has status {entry['status']!r} "
                             f"(one of {', '.join(STATUSES)})")
        found.append(Finding(**{f: entry[f] for f in FIELDS}))
    return found
