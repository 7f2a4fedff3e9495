"""Crash records: a rank that raised left word of it, so the run cannot be judged a pass.

A rank whose job body raised writes ``DIR/crashes/rank-R.json`` before the job
ends (``{"rank", "host", "exception", "message", "traceback"}``, the traceback as
its lines). This module reads them with its own code (the checker shares no reader
with the production path). A run with a crash record is unknown, naming the first
crash, whatever its histories say, unless something judged was already violated:
a failure stays a failure, the crash named beside it.
"""
from __future__ import annotations

import json
import os

CRASHES_DIR = "crashes"
SHOWN_FRAMES = 2  # the innermost "File ..., in ..." lines a reason quotes


def read_crashes(out_dir: str) -> list[dict]:
    """Every rank's crash record in ``out_dir``, by rank; a record that cannot be read says so."""
    folder = os.path.join(out_dir, CRASHES_DIR)
    names = sorted(n for n in os.listdir(folder) if n.startswith("rank-") and n.endswith(".json")) \
        if os.path.isdir(folder) else []
    records = []
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            data = {"rank": name[5:-5], "exception": "unreadable record", "message": type(exc).__name__}
        records.append(data if isinstance(data, dict) else {"rank": name[5:-5], "exception": "unreadable record"})
    return sorted(records, key=lambda r: int(r["rank"]) if str(r.get("rank", "")).isdigit() else 1 << 30)


def crash_text(records: list[dict]) -> str:
    """The first crash in words: rank, host, exception, message and where it was raised."""
    first = records[0]
    frames = [line.strip() for line in first.get("traceback") or [] if str(line).strip().startswith("File ")]
    where = f" at {' <- '.join(reversed(frames[-SHOWN_FRAMES:]))}" if frames else ""
    host = f" ({first['host']})" if first.get("host") else ""
    more = f"; {len(records) - 1} other rank(s) crashed too" if len(records) > 1 else ""
    return (f"rank {first.get('rank', '?')}{host} crashed: {first.get('exception', '?')}: "
            f"{first.get('message', '')}{where}{more}")


def apply(verdict, out_dir: str):
    """The run's verdict with its crash records: unknown naming the crash unless it failed."""
    records = read_crashes(out_dir)
    verdict.crashes = records
    if not records:
        return verdict
    text = crash_text(records)
    if verdict.verdict == "fail":
        return verdict
    verdict.reason = text if verdict.verdict == "pass" or not verdict.reason else f"{text}; {verdict.reason}"
    verdict.verdict = "unknown"
    return verdict
