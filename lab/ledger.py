"""The findings ledger (lab/FINDINGS.toml, beside this file), read into frozen records.

The ledger is versioned with the code: every defect the suite, its tests and its
analysis surfaced, how it was found, how to replay it, and whether and where it
was fixed. It is part of the lab: the product neither imports nor ships it.
"""
from __future__ import annotations

import os
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[1]
LEDGER = Path(__file__).resolve().with_name("FINDINGS.toml")
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


# A ledger replay is written as typed in the source tree with its environment active
# (``python``, ``mpirun``, paths relative to the tree). Shown on a page, it must paste from
# any folder with a bare PATH: the programs by their absolute paths and, for one that names
# a file of the tree, a ``cd`` into the tree first.
_BEFORE = r"(^|(?<=[\s;&|(]))"
_WORD = re.compile(_BEFORE + r"(?:\.venv/bin/)?(python3?|mpirun|mpiexec)(?=\s|$)")
_TREE_PATH = re.compile(r"(?:^|\s)((?:lab|tests|repro|jobs|scripts|mpibench|platforms)/\S+)")


def pasteable(replay: str, python: str | None = None) -> str:
    """``replay`` as a command that runs from any folder with PATH=/usr/bin:/bin: ``python``
    (default: this interpreter) and the ``mpirun`` beside it by their absolute paths, and
    ``cd SOURCE_ROOT &&`` first when it names a file of the source tree."""
    python = python or sys.executable
    bindir = os.path.dirname(python)

    def absolute(match: re.Match) -> str:
        word = match.group(2)
        if word.startswith("python"):
            return python
        beside = os.path.join(bindir, word)
        return beside if os.access(beside, os.X_OK) else word

    text = _WORD.sub(absolute, replay.strip())
    if any((SOURCE_ROOT / path).exists() for path in _TREE_PATH.findall(text)):
        text = f"cd {SOURCE_ROOT} && {text}"
    return text
