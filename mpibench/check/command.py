"""``python -m mpibench check DIR``: judge a stored run, write its verdict, exit with it."""
from __future__ import annotations

import os
import sys

from .outputs import exit_status, verdict_line, write_outputs
from .verdict import check_run

USAGE = 2


def check_command(out_dir: str, stream=None) -> int:
    """0 pass, 1 a violation, 3 cannot judge, 2 when ``out_dir`` is not a folder."""
    stream = stream or sys.stdout
    if not os.path.isdir(out_dir):
        sys.stderr.write(f"mpibench: error: no such folder: {out_dir}\n")
        return USAGE
    verdict = check_run(out_dir)
    if verdict.cases or os.path.exists(os.path.join(out_dir, "run.json")):
        write_outputs(out_dir, verdict)
    stream.write(verdict_line(verdict) + "\n")
    return exit_status(verdict)
