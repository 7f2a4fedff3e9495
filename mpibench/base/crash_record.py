"""What a rank leaves in the run's folder when its job body raised.

``crashes/rank-R.json`` (rank, host, exception, message, traceback lines: the form
:mod:`mpibench.check.crashes` reads), written whole or not at all; the first rank to
claim ``crashes/judging`` judges the run, then writes ``crashes/ended``, on which
every other rank leaves (:mod:`.folder_watch`). A rank that found the run stuck (a peer
gave no answer and nothing recovers) claims ``crashes/stuck.json`` the same way: the
first to claim it says so, and every other rank leaves on it with status 1.
"""
from __future__ import annotations

import json
import os
import time
import traceback
from dataclasses import asdict, dataclass

CRASHES_DIR = "crashes"
ENDED = "ended"  # written once the crash has been judged: the other ranks leave
JUDGING = "judging"  # created exclusively by the one rank that judges
STUCK = "stuck.json"  # created exclusively by the first rank that found the run stuck


@dataclass(frozen=True)
class CrashRecord:
    rank: int
    host: str
    exception: str  # the exception's class name
    message: str
    traceback: list  # the formatted traceback, one line each

    @classmethod
    def of(cls, exc: BaseException, rank: int, host: str) -> "CrashRecord":
        lines = "".join(traceback.format_exception(exc)).splitlines()
        return cls(rank, host, type(exc).__name__, str(exc), lines)

    def first_lines(self, frames: int = 2) -> list[str]:
        """The innermost ``frames`` frames of the traceback (file line and source line each)."""
        body = [line for line in self.traceback[1:-1] if not line.strip().startswith(("^", "~"))]
        starts = [i for i, line in enumerate(body) if line.strip().startswith("File ")]
        kept = body[starts[-frames]:] if len(starts) >= frames else body
        return [line.rstrip() for line in kept]


def _path(folder: str, name: str) -> str:
    return os.path.join(folder, CRASHES_DIR, name)


def write_record(folder: str, record: CrashRecord) -> str:
    """``crashes/rank-R.json``, whole or not at all (tmp file + rename)."""
    os.makedirs(os.path.join(folder, CRASHES_DIR), exist_ok=True)
    path = _path(folder, f"rank-{record.rank}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(asdict(record), fh, indent=1)
    os.replace(path + ".tmp", path)
    return path


def claim_judging(folder: str) -> bool:
    """True for the one rank that gets to judge the crashed run (the first to ask)."""
    try:
        os.close(os.open(_path(folder, JUDGING), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def claimed(folder: str) -> bool:
    return os.path.exists(_path(folder, JUDGING))


def claimed_older_than(folder: str, age_s: float) -> bool:
    try:
        return time.time() - os.stat(_path(folder, JUDGING)).st_mtime > age_s
    except OSError:
        return False


def mark_ended(folder: str) -> None:
    with open(_path(folder, ENDED), "w") as fh:
        fh.write(f"{os.getpid()}\n")


def is_ended(folder: str) -> bool:
    return os.path.exists(_path(folder, ENDED))


def records_older_than(folder: str, age_s: float) -> bool:
    """A crash record older than ``age_s`` is there (its judge had time to end the job)."""
    try:
        names = [n for n in os.listdir(os.path.join(folder, CRASHES_DIR)) if n.endswith(".json")]
        oldest = min(os.stat(_path(folder, n)).st_mtime for n in names) if names else None
    except (OSError, ValueError):
        return False
    return oldest is not None and time.time() - oldest > age_s


def claim_stuck(folder: str, rank: int, message: str) -> bool:
    """True for the first rank to say the run is stuck (it writes who and why); False when
    another rank said so first (or the folder cannot take the mark: the caller's abort stays)."""
    try:
        os.makedirs(os.path.join(folder, CRASHES_DIR), exist_ok=True)
        fd = os.open(_path(folder, STUCK), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    except OSError:
        return True
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"rank": rank, "message": message}, fh)
    return True


def stuck_rank(folder: str) -> str | None:
    """The rank that said the run is stuck ("?" while its mark is being written), None if none."""
    try:
        with open(_path(folder, STUCK), encoding="utf-8") as fh:
            return str(json.load(fh)["rank"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return "?"


def note_left(folder: str) -> None:
    """This process leaves on the crash's mark now (``crashes/left-PID``): the judge waits for
    its peers to be gone before it ends itself, so that no launcher ends them first (MPICH's
    kills its remaining processes with SIGKILL and then reports that signal as the status)."""
    try:
        with open(_path(folder, f"left-{os.getpid()}"), "w") as fh:
            fh.write("")
    except OSError:
        pass


def left_count(folder: str) -> int:
    try:
        return sum(name.startswith("left-") for name in os.listdir(os.path.join(folder, CRASHES_DIR)))
    except OSError:
        return 0
