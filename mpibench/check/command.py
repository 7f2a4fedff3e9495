"""``python -m mpibench check DIR``: judge a stored run, write its verdict, exit with it."""
from __future__ import annotations

import os
import sys

from .outputs import exit_status, verdict_json, verdict_line, write_outputs
from .verdict import check_run

USAGE = 2


def check_command(out_dir: str, stream=None, confirm: bool = False) -> int:
    """0 pass, 1 a violation, 3 cannot judge, 4 partial, 2 when ``out_dir`` is not a folder.

    ``confirm``: the job printed its verdict already (``make run``); the line is printed
    again only when this judgement differs from the verdict.json the job left."""
    stream = stream or sys.stdout
    if not os.path.isdir(out_dir):
        sys.stderr.write(f"mpibench: error: no such folder: {out_dir}\n")
        return USAGE
    before = _text(os.path.join(out_dir, "verdict.json"))
    verdict = check_run(out_dir)
    if verdict.cases or os.path.exists(os.path.join(out_dir, "run.json")):
        write_outputs(out_dir, verdict)
    if not confirm or before is None or before != verdict_json(verdict):
        stream.write(verdict_line(verdict) + "\n")
    return exit_status(verdict)


def _text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None
