"""State kept per engine: a sweep of simulated runs leaves what real runs read as it was.

Real runs read ``auto``'s record of choices in the machine's cache (``$MPIBENCH_CACHE``, else
``$XDG_CACHE_HOME/mpibench``, else ``~/.cache/mpibench``); a simulated run's choices come from
virtual time and are kept apart, per simulated job (mpibench.sync.auto_choices.kept_apart).
The sweep below runs ``auto`` (and ``ring``) simulated, two cases at a time in forked processes
(``--jobs 2``), with every one of those places pointing
into a folder of the test's own, holding a record that names the candidate virtual time does
not choose: afterwards every file there is byte for byte what it was and nothing was added,
and no simulated case read the record either (its rows name the virtual-time choice).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def snapshot(*folders: Path) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_simulated_sweep_leaves_the_machines_cache_and_real_inputs_unchanged(tmp_path):
    cache, xdg, home = tmp_path / "cache", tmp_path / "xdg", tmp_path / "home"
    for folder in (cache, xdg / "mpibench", home / ".cache" / "mpibench"):
        folder.mkdir(parents=True)
        # the candidate virtual time does not choose for these widths (it chooses rd)
        record = {"schema": 1, "choices": {f"p={p} width={w} dtype=float32": "rabenseifner"
                                           for p in (1, 2, 3) for w in (677, 19211)}}
        (folder / "auto-choices.json").write_text(json.dumps(record, indent=1) + "\n")
    before = snapshot(cache, xdg, home)
    env = {**os.environ, "MPIBENCH_CACHE": str(cache), "XDG_CACHE_HOME": str(xdg), "HOME": str(home)}
    env.pop("MPIBENCH_AUTO_CHOICES", None)
    out = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, "-m", "mpibench", "sweep", "--engine", "sim", "--seeds", "2",
                           "--workers", "2,3", "--strategies", "auto,ring", "--no-replay-on-mpi", "--jobs", "2",
                           "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    assert snapshot(cache, xdg, home) == before
    algorithms = set()
    for steps in out.rglob("steps.csv"):
        with open(steps, newline="") as f:
            algorithms |= {r["algorithm"] for r in csv.DictReader(f) if r.get("algorithm", "").startswith("auto")}
    assert algorithms and not any("rabenseifner" in a for a in algorithms), algorithms
