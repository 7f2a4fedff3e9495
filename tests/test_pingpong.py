"""The after-compute ping-pong measures the messages, not which rank finished computing last."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpirun import mpirun_command, run_command

DRIVER = str(Path(__file__).with_name("pingpong_driver.py"))
SLEEP_S = 0.02  # far above any half round trip between two ranks of one host


@pytest.mark.parametrize("slow_rank", [0, 1])
def test_one_ranks_longer_computation_is_not_counted_as_latency(slow_rank):
    # Whichever rank computes longer, the clock starts once both have computed: an arrival
    # skew of 20 ms per round trip would otherwise show as a half round trip of 10 ms or more.
    job = run_command(mpirun_command() + ["-n", "2", sys.executable, DRIVER, str(slow_rank), str(SLEEP_S)], 120)
    assert job.returncode == 0, job.stderr[-2000:]
    lines = [line.split() for line in job.stdout.splitlines() if line.startswith("HALF_RTT_S")]
    assert [int(size) for _, size, _ in lines] == [8, 1024]
    for _, size, seconds in lines:
        assert 0 < float(seconds) < SLEEP_S / 4, f"{size} B: half round trip {seconds} s carries the skew"
