"""Run code on the simulated engine in a fresh Python process, with a hard timeout.

The simulated process model replaces ``mpi4py.MPI`` and the clock functions
for good in the process that hosts it, so it never runs inside pytest's own
process: each test starts one child, which prints its findings as one JSON
line after ``RESULT``. A missing result line is a failure that shows the
child's output, never a skip.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRIVERS = Path(__file__).parent / "drivers"


def run_driver(name: str, *args: str, timeout_s: float = 240.0) -> dict:
    """``tests/drivers/NAME.py ARGS`` in a child; the dict it printed after ``RESULT``."""
    proc = subprocess.run([sys.executable, str(DRIVERS / name), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout_s)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError(f"{name} printed no RESULT (exit {proc.returncode}):\n"
                         f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def run_cli(*args: str, timeout_s: float = 240.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpibench", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout_s)
