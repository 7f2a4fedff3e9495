"""``sweep --engine sim`` (mpibench.sim.sweep, .sweep_entry): cases run in parallel, a record resumed.

Cases run by ``--jobs 2`` (forked processes) get the rows one process gives them; ``--resume``
runs exactly the cases an earlier launch's sweep.csv lacks and leaves one row per case; a
resume that cannot go on is one line and exit 2, nothing in the folder lost; a case that holds
the host (simulated code that never blocks) is ended at its deadline and recorded as a hang.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from simrun import run_cli

BLOCK = ["--exhaustive", "--workers", "2", "--strategies", "ring", "--recoveries", "shrink"]  # 54 cases


def sweep(out, *args):
    return run_cli("sweep", "--engine", "sim", *BLOCK, "--no-replay-on-mpi", "--shrink-runs", "0", "--out", str(out),
                   *args)


def rows(out) -> dict[str, dict]:
    """sweep.csv by case, without its wall-clock column."""
    with open(out / "sweep.csv", newline="") as f:
        return {r["case"]: {k: v for k, v in r.items() if not k.endswith("_s")} for r in csv.DictReader(f)}


def test_jobs_2_then_a_resume_give_one_process_rows_for_every_case(tmp_path):
    out = tmp_path / "sweep"
    first = sweep(out, "--jobs", "2")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    whole = rows(out)
    assert len(whole) == 54 and json.loads((out / "sweep.json").read_text())["cases"] == 54
    # Drop a third of the record (every third row, p = 2's kills and cuts alike) and resume in one process.
    with open(out / "sweep.csv", newline="") as f:
        reader = csv.DictReader(f)
        kept = [r for i, r in enumerate(reader) if i % 3]
        columns = reader.fieldnames
    with open(out / "sweep.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(kept)
    again = sweep(out, "--resume")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    summary = json.loads((out / "sweep.json").read_text())
    assert summary["launch_cases"] == 54 - len(kept) == 18 and summary["resumed_cases"] == len(kept)
    assert summary["cases"] == 54 and summary["by_outcome"] == {"ok": 54}
    assert rows(out) == whole  # the same rows, each case once, whichever process ran it


@pytest.mark.parametrize("setup,args,words", [
    ("none", ["--resume"], "holds no sweep.csv"),
    ("record", ["--resume", "--force"], "--resume keeps"),
    ("record", ["--resume", "--strategies", "ps"], "another plan"),
])
def test_a_resume_that_cannot_go_on_is_one_line_and_exit_2(tmp_path, setup, args, words):
    out = tmp_path / "sweep"
    if setup == "record":
        out.mkdir()
        (out / "sweep.csv").write_text("case\n")
        (out / "sweep.json").write_text(json.dumps({"plan": "exhaustive", "workers": [2], "recoveries": ["shrink"],
                                                    "strategies": ["ring"]}))
    before = sorted(p.name for p in out.iterdir()) if out.exists() else []
    proc = sweep(out, *args)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert (sorted(p.name for p in out.iterdir()) if out.exists() else []) == before


SPIN_PLUGIN = '''
from mpibench.sync.base import Reduction, SyncStrategy


class Spin(SyncStrategy):
    name = "spin"

    def reduce(self, buf):
        while self.comm.rank == 0:  # never blocks, never yields: only a wall bound ends it
            pass
        self.comm.allreduce(buf.copy(), buf)
        return Reduction(self.comm.worker_ids, [(0, len(buf))], len(buf))
'''


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_case_that_holds_the_host_is_ended_at_its_deadline_as_a_hang_and_the_sweep_goes_on(tmp_path, jobs):
    (tmp_path / "spin_plugin.py").write_text(SPIN_PLUGIN)
    out = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    job = subprocess.run([sys.executable, "-m", "mpibench", "sweep", "--engine", "sim", "--strategies",
                          "ring,spin_plugin:Spin", "--seeds", "2", "--workers", "2", "--case-deadline", "2",
                          "--shrink-runs", "0", "--no-replay-on-mpi", "--jobs", jobs, "--out", str(out)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    text = job.stdout + job.stderr
    assert "Traceback" not in text, text[-3000:]
    found = rows(out)
    assert {c: r["outcome"] for c, r in found.items()} == {
        "s0-n2-ring": "ok", "s1-n2-ring": "ok", "s0-n2-spin_plugin.Spin": "hang", "s1-n2-spin_plugin.Spin": "hang"}
    hung = found["s0-n2-spin_plugin.Spin"]
    assert hung["first_violation"] == "hung: no exit within the 2 s deadline"
    # The replay names where the plugin came from, so it runs as pasted in a clean shell.
    assert f"PYTHONPATH={env['PYTHONPATH']}" in hung["replay"] and "--engine sim" in hung["replay"]
    assert not any(":" in p.name for p in (out / "cases").iterdir())
