"""How a job ends when its body raised on one rank: judged, named and over within seconds.

The rank that raised records the crash in the run's folder (:mod:`mpibench.base.crash_record`);
the first such rank judges the folder as the checker would (the crash record makes the
run "cannot judge", exit 3), builds the page from it, and says in a few lines which rank
crashed, with what and where. Then it writes the mark on which every other rank leaves,
and the caller ends this process. Both engines end a crash this way; a crash before the
folder was open has nothing to judge and leaves it to the caller's abort.
"""
from __future__ import annotations

import os
import sys
import time

from mpibench.base.crash_record import (CrashRecord, claim_judging, is_ended, left_count, mark_ended, note_left,
                                        write_record)
from mpibench.base.folder_watch import JUDGING_LIMIT_S, POLL_S, judging_crash_here, run_folder
from mpibench.base.exits import EXIT_COULD_NOT_RUN
from mpibench.sync.comm import COLLECTIVE

# Late ranks' records: how long the judge waits for every rank's (a rank that waits on nobody
# finds its deadline at about the same moment as those that wait on it).
LATE_PEERS_S = 2.0
SURVIVORS_SEE_S = 4 * POLL_S  # time the other ranks get to see the mark before the abort
# With the world's size known, the judge waits until every other process said it left on the
# mark (crashes/left-PID), at most this long (a killed rank never says so). A fixed second was
# too short under load: MPICH's launcher SIGKILLed a rank still leaving and reported status 9.
SURVIVORS_LEAVE_S = 4.0


def end_after_crash(exc: BaseException, rank: int, host: str, say=print, world_size: int | None = None) -> int | None:
    """Record, judge and announce this rank's crash; the job's status (3), or None when
    no run folder is open yet (nothing to judge: the caller aborts as it would).
    ``world_size``: the processes a launcher started with this one (their leaving is
    waited for); None: give them a fixed moment (the simulated engine's processes)."""
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
        if world_size is not None:  # leave as the other ranks do, without an abort that would end the judge
            note_left(folder)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_COULD_NOT_RUN)
        return EXIT_COULD_NOT_RUN
    judging_crash_here()
    late = record.exception == "PeerLate"
    if late:  # every rank waiting on the silent one times out at about once: hear them all first
        _wait_until(lambda: _records(folder) >= (world_size or 1), LATE_PEERS_S)
    else:
        say(f"crash: rank {rank} ({host}): {record.exception}: {record.message}")
        for line in record.first_lines():
            say(f"crash:   {line.strip()}")
    status = _judge(folder)
    mark_ended(folder)
    if late:
        waits = _late_waits(folder) or [record.message]
        for line in waits[1:]:
            say(f"late: {line}")
        say(f"mpibench: PeerLate: {waits[0]}; the job ends now (exit {status}, record in {folder}/crashes/)")
    else:
        say(f"mpibench: rank {rank} crashed; the job ends now (exit {status}; full traceback above, "
            f"record in {folder}/crashes/)")
    if world_size is None:
        time.sleep(SURVIVORS_SEE_S)
    else:
        _wait_until(lambda: left_count(folder) >= world_size - 1, SURVIVORS_LEAVE_S)
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


def _records(folder: str) -> int:
    try:
        return sum(n.startswith("rank-") and n.endswith(".json") for n in os.listdir(os.path.join(folder, "crashes")))
    except OSError:
        return 0


def _late_waits(folder: str) -> list[str]:
    """Each late rank's wait in words, the most telling first: a point-to-point wait that names a
    rank which left no record of its own (it is the one that never answered: hung, or waiting
    where no deadline reaches), then other point-to-point waits, then collectives' (they only
    say that someone did not come)."""
    import json
    import re

    late = []
    for name in sorted(os.listdir(os.path.join(folder, "crashes"))):
        if name.startswith("rank-") and name.endswith(".json"):
            try:
                with open(os.path.join(folder, "crashes", name), encoding="utf-8") as fh:
                    data = json.load(fh)
            except (OSError, ValueError):
                continue
            if data.get("exception") == "PeerLate":
                late.append((int(data.get("rank", 0)), data.get("message", "")))
    recorded = {rank for rank, _ in late}
    found = []
    for rank, message in late:
        named = {int(r) for r in re.findall(r"rank (\d+)", message.partition("waited for")[2])}
        found.append((COLLECTIVE in message, not (named - recorded), rank, message))
    return [message for *_, message in sorted(found)]


def _wait_until(done, limit_s: float) -> None:
    give_up = time.monotonic() + limit_s
    while not done() and time.monotonic() < give_up:
        time.sleep(POLL_S)
