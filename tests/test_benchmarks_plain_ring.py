"""lab/studies/plain_ring.py, the plain-mpi4py ring the suite's ring is compared with, reduces right."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpirun import mpirun_command, run_command

DRIVER = Path(__file__).parent / "drivers" / "plain_ring_driver.py"
LENGTHS = ["0", "1", "2", "5", "1000", "4099"]  # empty, fewer elements than ranks, uneven segments


@pytest.mark.parametrize("ranks", [1, 2, 3, 5])
def test_plain_ring_sums_every_element_on_every_rank(ranks):
    job = run_command(mpirun_command() + ["-n", str(ranks), sys.executable, str(DRIVER), *LENGTHS], 120)
    assert job.returncode == 0, job.text[-3000:]
    assert job.stdout.count("worst") == ranks * len(LENGTHS)
