"""Every rank of a job watches its run folder, so the job ends when its status is known.

Two endings reach a rank through the folder every rank writes its history into, not
through MPI, because MPI was seen to miss both: under Open MPI's ``--with-ft ulfm`` an
``MPI_Abort`` on a crashing rank ended that rank only (the others waited in their
reduction until a deadline gave up, 30 s and more); and one respawn job in ten that
had printed its verdict was still running 120 s later (a rank stuck before it armed its
own exit timer). Once the job notes its folder (:func:`note_run_folder`), a daemon
thread in each rank a launcher started looks four times a second for:

- ``crashes/ended`` (:mod:`.crash_record`): a rank crashed and its crash has been
  judged; this rank leaves at once with "cannot judge" (exit 3). A crash record that
  nobody claimed to judge for :data:`JUDGE_WAIT_S` (its rank died first), or a claim
  older than :data:`JUDGING_LIMIT_S` (the judge died), ends the rank too; the judging
  process itself is never ended by these;
- ``crashes/stuck.json``: a rank found the run stuck (a peer gave no answer within the
  deadline and no recovery absorbs it) and said so; this rank leaves at once with
  status 1 (under ``--with-ft ulfm`` that rank's ``MPI_Abort`` ends it alone);
- ``exit-status.json``: the rank that judged the run has finished its body (verdict,
  page) and wrote the job's status; this rank leaves with that status if it has not
  left :data:`AFTER_STATUS_S` later;
- ``verdict.json`` written by this job with no ``exit-status.json`` after
  :data:`AFTER_VERDICT_S` (the judging rank got stuck itself): leave with its status.

The process that judged writes the status (:func:`announce_status`) and keeps its own
bound (``cli/ending.py``). A ``--force`` run clears all three before the job starts.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time

from . import crash_record
from .exits import EXIT_COULD_NOT_RUN, EXIT_VIOLATION

STATUS_FILE = "exit-status.json"
VERDICT_FILE = "verdict.json"
POLL_S = 0.25
JUDGE_WAIT_S = 8.0
JUDGING_LIMIT_S = 60.0  # judging a crashed run and building its page, on a loaded machine
AFTER_STATUS_S = float(os.environ.get("MPIBENCH_AFTER_STATUS_S", "5"))  # the exit agreement takes < 1 s
AFTER_VERDICT_S = 30.0  # the verdict, then the page: the main job's page takes a few seconds

_noted: list = []  # (folder, time noted) of the job's run folder, once open
_judged_here: list = []  # this process wrote the verdict (it announces the status)
_judging_crash_here: list = []  # this process judges a crash: its own watch leaves that to it


def note_run_folder(folder: str | None) -> None:
    """The job's folder is open: a crash is recorded there, and (in a rank a launcher
    started) the folder is watched from now on. The first folder noted stays."""
    if _noted or not folder:
        return
    _noted.append((folder, time.time()))
    from .orphan_guard import started_by_launcher

    if started_by_launcher():
        threading.Thread(target=_watch, args=(folder, time.time()), name="mpibench-folder-watch",
                         daemon=True).start()


def run_folder() -> str | None:
    return _noted[0][0] if _noted else None


def judging_crash_here() -> None:
    """This process judges a crashed run: it ends itself once done, not by its watch."""
    _judging_crash_here.append(True)


def _crash_says_leave(folder: str) -> bool:
    if _judging_crash_here:
        return False
    if crash_record.is_ended(folder):
        return True
    if crash_record.claimed_older_than(folder, JUDGING_LIMIT_S):
        return True
    return not crash_record.claimed(folder) and crash_record.records_older_than(folder, JUDGE_WAIT_S)


def verdict_written_here(folder: str) -> None:
    """This process wrote the job's verdict into ``folder`` (it announces the status)."""
    if run_folder() == folder:
        _judged_here.append(folder)


def announce_status(code: int) -> None:
    """The judging process's body returned ``code``: every rank may leave with it now."""
    if not _judged_here:
        return
    path = os.path.join(_judged_here[0], STATUS_FILE)
    try:
        with open(path + ".tmp", "w") as fh:
            json.dump({"exit_status": code}, fh)
        os.replace(path + ".tmp", path)
    except OSError:  # the folder went away: the ranks' own bounds still hold
        pass


def _written_since(path: str, since: float) -> float | None:
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    return mtime if mtime >= since else None


def _status_in(path: str, key: str = "exit_status") -> int:
    try:
        with open(path) as fh:
            return int(json.load(fh)[key])
    except (OSError, ValueError, KeyError, TypeError):
        return EXIT_COULD_NOT_RUN


def _watch(folder: str, since: float) -> None:
    status, verdict = os.path.join(folder, STATUS_FILE), os.path.join(folder, VERDICT_FILE)
    while True:
        time.sleep(POLL_S)
        if _crash_says_leave(folder):
            _leave(EXIT_COULD_NOT_RUN, "a rank crashed")
        stuck = crash_record.stuck_rank(folder)
        if stuck is not None:
            _leave(EXIT_VIOLATION, f"rank {stuck} found the run stuck")
        at = _written_since(status, since)
        if at is not None and time.time() - at > AFTER_STATUS_S:
            _leave(_status_in(status), f"the job's status was known {AFTER_STATUS_S:g} s ago")
        at = _written_since(verdict, since)
        if at is not None and time.time() - at > AFTER_VERDICT_S and not _judged_here:
            _leave(_status_in(verdict), f"the verdict was written {AFTER_VERDICT_S:g} s ago")


def _leave(code: int, why: str) -> None:
    if why.startswith("a rank crashed"):
        crash_record.note_left(run_folder())
    try:
        if not why.startswith("a rank crashed"):
            rank = next((os.environ[v] for v in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")
                         if v in os.environ), "?")
            sys.stderr.write(f"mpibench: rank {rank} (pid {os.getpid()}) had not left; {why}: leaving "
                             f"with status {code}\n")
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
