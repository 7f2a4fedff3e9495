"""Comm's rooted and scattering collectives (mpibench.sync.collectives) on both libraries:
``reduce`` (sum to rank 1, max to rank 0), ``reduce_scatter`` with uneven counts, ``scatter``
from rank 2, ``gather`` to rank 0, at 0, 1, 2 (fewer than the ranks) and 7 elements. What each
rank must hold is computed here from the inputs alone; a buffer the call does not write keeps
its -1s."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpirun import mpi_env, mpirun_command, run_command

DRIVER = Path(__file__).parent / "drivers" / "comm_collectives.py"
ROOT = Path(__file__).resolve().parents[1]
P = 3


def inputs(n: int) -> list[np.ndarray]:
    return [np.arange(n, dtype=np.float64) * (r + 1) + r for r in range(P)]


def expected(rank: int, n: int) -> dict:
    every = inputs(n)
    total, top = np.sum(every, axis=0) if n else np.zeros(0), np.max(every, axis=0) if n else np.zeros(0)
    counts = [n // P + (1 if i < n % P else 0) for i in range(P)]
    start = sum(counts[:rank])
    untouched = [-1.0] * n
    return {"reduce": total.tolist() if rank == 1 else untouched,
            "reduce_max": top.tolist() if rank == 0 else untouched,
            "reduce_scatter": total[start:start + counts[rank]].tolist(),
            "scatter": np.arange(n * P, dtype=np.float64)[rank * n:(rank + 1) * n].tolist(),
            "gather": np.concatenate(every).tolist() if rank == 0 else [-1.0] * (n * P)}


def assert_every_rank(stdout: str, text: str) -> None:
    seen = {int(line.split()[1]): json.loads(line.split(" ", 2)[2]) for line in stdout.splitlines()
            if line.startswith("RANK ")}
    assert sorted(seen) == list(range(P)), text[-3000:]
    for rank, by_size in seen.items():
        for n in (0, 1, 2, 7):
            assert by_size[str(n)] == expected(rank, n), (rank, n, by_size[str(n)])


def test_the_simulated_library_gives_every_rank_its_share():
    proc = subprocess.run([sys.executable, str(DRIVER), "--sim"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert_every_rank(proc.stdout, proc.stdout + proc.stderr)


@pytest.mark.mpi
def test_the_real_library_gives_every_rank_its_share():
    job = run_command([*mpirun_command(), "-n", str(P), sys.executable, str(DRIVER)], timeout=120, cwd=ROOT,
                      env=mpi_env())
    assert job.returncode == 0, job.text[-3000:]
    assert_every_rank(job.stdout, job.text)
