"""The step watchdog and the quorum stall inside simulated processes (mpibench.sim.threads).

With ``OMPI_MCA_mpi_ft_detector=true`` the quorum rule holds the one survivor of a cascade at
p = 3 (1 of 3 is no majority): it stalls in ``threading.Event().wait()`` and its step
watchdog (a ``threading.Thread``) ends it with ``stuck:`` and exit 1, as on MPI. Before the seam
covered threads and events, that wait blocked the host's thread and the simulated run hung.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_stalled_survivor_is_ended_by_its_watchdog_as_on_mpi(tmp_path):
    env = {**os.environ, "OMPI_MCA_mpi_ft_detector": "true"}
    proc = subprocess.run([sys.executable, "-m", "mpibench", "run", "--engine", "sim", "--ranks", "3", "--strategy",
                           "ring", "--scenario", "cascade", "--recovery", "shrink", "--steps", "5",
                           "--out", str(tmp_path / "run")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text[-3000:]
    assert "fault: no quorum: workers 0 of 0 1 2 stall at step 2" in text, text[-3000:]
    assert "stuck: step 2 made no progress for 300 s on members 0 1 2" in text, text[-3000:]
    assert "waited forever" not in text  # ended by the watchdog, not by the engine's hang detection
