"""How a job ends when its body raised on one rank: judged, named and over within seconds.

The rank that raised records the crash in the run's folder (:mod:`mpibench.base.crash_record`);
the first such rank judges the folder as the checker would (the crash record makes the
run "cannot judge", exit 3), builds the page from it, and says in a few lines which rank
crashed, with what and where. Then it writes the mark on which every other rank leaves,
and the caller ends this process. Both engines end a crash this way; a crash before the
folder was open has nothing to judge and leaves it to the caller's abort.
"""
from __future__ import annotations

import sys
import time

from mpibench.base.crash_record import CrashRecord, claim_judging, is_ended, mark_ended, write_record
from mpibench.base.folder_watch import JUDGING_LIMIT_S, POLL_S, judging_crash_here, run_folder
from mpibench.base.exits import EXIT_COULD_NOT_RUN

SURVIVORS_LEAVE_S = 4 * POLL_S  # time the other ranks get to see the mark before the abort


def end_after_crash(exc: BaseException, rank: int, host: str, say=print) -> int | None:
    """Record, judge and announce this rank's crash; the job's status (3), or None when
    no run folder is open yet (nothing to judge: the caller aborts as it would)."""
    folder = run_folder()
    if folder is None:
        return None
    record = CrashRecord.of(exc, rank, host)
    try:
        write_record(folder, record)
    except OSError as exc_write:
        say(f"mpibench: rank {rank}: the crash record could not be written ({exc_write})")
        return None
    if not claim_judging(folder):  # another rank crashed first and judges; wait for its word
        _wait_until(lambda: is_ended(folder), JUDGING_LIMIT_S)
        return EXIT_COULD_NOT_RUN
    judging_crash_here()
    say(f"crash: rank {rank} ({host}): {record.exception}: {record.message}")
    for line in record.first_lines():
        say(f"crash:   {line.strip()}")
    status = _judge(folder)
    mark_ended(folder)
    say(f"mpibench: rank {rank} crashed; the job ends now (exit {status}; full traceback above, "
        f"record in {folder}/crashes/)")
    time.sleep(SURVIVORS_LEAVE_S)
    return status


def _judge(folder: str) -> int:
    """verdict.json, invariants.csv and report.html from the folder; the verdict's status."""
    from .finish import write_page
    from .runfolder import verdict_status

    try:
        status = verdict_status(folder)
    except Exception as exc:  # noqa: BLE001 - a crash must still end the job with "cannot judge"
        print(f"mpibench: the crashed run could not be judged ({type(exc).__name__}: {exc})", flush=True)
        return EXIT_COULD_NOT_RUN
    write_page(folder)
    sys.stdout.flush()
    return status


def _wait_until(done, limit_s: float) -> None:
    give_up = time.monotonic() + limit_s
    while not done() and time.monotonic() < give_up:
        time.sleep(POLL_S)
