"""The after-compute exchange measures the messages, not which rank finished computing last,
and every rank is handed the same points (a rank outside the pair too)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpirun import mpirun_command, run_command

DRIVER = str(Path(__file__).with_name("exchange_driver.py"))
SLEEP_S = 0.02  # far above any exchange between two ranks of one host


@pytest.mark.parametrize("ranks, slow_rank", [(2, 0), (2, 1), (3, 2)])
def test_one_ranks_longer_computation_is_not_counted_as_latency(ranks, slow_rank):
    # Whichever rank computes longer, rank 0's clock starts once both have computed: an arrival
    # skew of 20 ms per exchange would otherwise show as an exchange of 20 ms.
    job = run_command(mpirun_command() + ["-n", str(ranks), sys.executable, DRIVER, str(slow_rank), str(SLEEP_S)],
                      120)
    assert job.returncode == 0, job.stderr[-2000:]
    lines = [line.split() for line in job.stdout.splitlines() if line.startswith("EXCHANGE_S")]
    assert [int(size) for _, size, _ in lines] == [8, 1024, 64 << 10]
    for _, size, seconds in lines:
        assert 0 < float(seconds) < SLEEP_S / 4, f"{size} B: exchange {seconds} s carries the skew"
    handed = sorted(line.split()[1:] for line in job.stdout.splitlines() if line.startswith("POINTS"))
    assert handed == [[str(r), "3"] for r in range(ranks)]
