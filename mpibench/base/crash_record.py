"""What a rank leaves when its job body raised, and how the other ranks learn of it.

A crash on one rank must end the whole job at once. ``MPI_Abort`` does not do that
everywhere: under Open MPI's ``--with-ft ulfm`` it ended only the calling rank, and
the others waited in their reduction until a deadline gave up (30 s and more), never
naming the exception. So the word travels through the run's folder, which every
rank writes its history into anyway:

- the job notes its folder once it is open (:func:`note_run_folder`); in a process a
  launcher started, a daemon thread then looks at ``DIR/crashes/`` four times a second;
- the rank that raised writes ``crashes/rank-R.json`` (rank, host, exception, message,
  traceback lines: the form :mod:`mpibench.check.crashes` reads), judges the folder
  (the first such rank only: :func:`claim_judging`) and writes ``crashes/ended``;
- every other rank's thread sees ``ended`` and leaves with "could not judge" (exit 3).
  Should the judging rank itself die first, its record alone ends them after
  :data:`JUDGE_WAIT_S`.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass

from .exits import EXIT_COULD_NOT_RUN

CRASHES_DIR = "crashes"
ENDED = "ended"  # written once the crash has been judged: the other ranks leave
JUDGING = "judging"  # created exclusively by the one rank that judges
POLL_S = 0.25
JUDGE_WAIT_S = 8.0  # a record without `ended` this long: the judging rank is gone, leave anyway

_folder: list[str] = []  # the job's run folder, once open (one per process)


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


def note_run_folder(folder: str | None) -> None:
    """The job's folder is open: a crash is recorded there, and (in a launched rank)
    another rank's crash is watched for there from now on. The first folder noted stays."""
    if _folder or not folder:
        return
    _folder.append(folder)
    from .orphan_guard import started_by_launcher

    if started_by_launcher():
        threading.Thread(target=_watch, args=(folder,), name="mpibench-crash-watch", daemon=True).start()


def run_folder() -> str | None:
    return _folder[0] if _folder else None


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


def mark_ended(folder: str) -> None:
    with open(_path(folder, ENDED), "w") as fh:
        fh.write(f"{os.getpid()}\n")


def is_ended(folder: str) -> bool:
    return os.path.exists(_path(folder, ENDED))


def _judge_gone(folder: str) -> bool:
    """A crash record older than JUDGE_WAIT_S and still no `ended`: nobody will write it."""
    try:
        names = [n for n in os.listdir(os.path.join(folder, CRASHES_DIR)) if n.endswith(".json")]
        oldest = min(os.stat(_path(folder, n)).st_mtime for n in names) if names else None
    except (OSError, ValueError):
        return False
    return oldest is not None and time.time() - oldest > JUDGE_WAIT_S


def _watch(folder: str) -> None:
    while True:
        time.sleep(POLL_S)
        if is_ended(folder) or _judge_gone(folder):
            _leave()


def _leave() -> None:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(EXIT_COULD_NOT_RUN)
