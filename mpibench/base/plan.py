"""What a run planned and what became of each planned phase: the record that makes a run
complete (or not).

A run writes its planned phases once, into ``run.json`` (key ``phases``, in plan order),
before any phase starts; each phase leaves ``DIR/phases/NAME.json`` when it ends:
``finished`` (it ran to its end; its own files say how it went) or ``not_run`` with what it
needs (``needs``: "--with-ft ulfm", "a free slot to spawn", ...). A phase with no file never
ended: the checker then calls the run unknown (exit 3) and names it. A phase the launch could
not support is accounted for, but the run is not a full pass: the status is
``EXIT_PARTIAL`` when everything that ran passed.

Phase names: a case id (``history/CASE``), ``sweep``, ``bench``, ``scaling``, ``report``.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

PHASES_DIR = "phases"
FINISHED, NOT_RUN = "finished", "not_run"


@dataclass(frozen=True)
class PhaseRecord:
    phase: str
    status: str  # FINISHED or NOT_RUN
    needs: str = ""  # for NOT_RUN: what the launch lacked, in words a user can act on


def phase_path(out_dir: str, phase: str) -> str:
    return os.path.join(out_dir, PHASES_DIR, f"{phase}.json")


def _write(out_dir: str, record: PhaseRecord) -> None:
    path = phase_path(out_dir, record.phase)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(asdict(record), fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)  # a reader never sees half a record


def mark_finished(out_dir: str, phase: str) -> None:
    _write(out_dir, PhaseRecord(phase, FINISHED))


def mark_not_run(out_dir: str, phase: str, needs: str) -> None:
    _write(out_dir, PhaseRecord(phase, NOT_RUN, needs))
