"""``make run``: a launch that failed before the job began is tried once more (one line says
so); a job that began, or a status of the job's own, is not. The stand-in launcher of
``test_selflaunch`` takes MPIRUN's place; the run it "makes" is an honest synthetic folder,
so make's own ``check --confirm`` judges it."""
import re
import subprocess
from pathlib import Path

import pytest

from history_builder import build
from mpirun import mpi_env
from test_selflaunch import ACTS, stand_in

ROOT = Path(__file__).resolve().parents[1]
RETRY_LINE = "make run: the launcher ended with status 213 before the job began (no run.json was written); trying once more"


@pytest.mark.parametrize("acts,status,retried", [
    (["unstarted", "ran"], 0, True),
    (["unstarted", "unstarted"], 3, True),  # could not run
    (["began-then-died"], 3, False),  # make's check cannot judge the folder
    (["verdict-1"], None, False),  # the job's own status: make's check decides
])
def test_make_run_tries_a_launch_that_began_nothing_once_more(tmp_path, acts, status, retried):
    honest = build(tmp_path / "honest")
    table = {**ACTS, "ran": f'mkdir -p "$out"; cp -r {honest}/. "$out"/; echo "verdict: pass"; exit 0'}
    out = tmp_path / "made"
    done = subprocess.run(["make", "-s", "run", f"MPIRUN={stand_in(tmp_path, acts, table)}", "NP=2", f"OUT={out}"],
                          cwd=ROOT, env=mpi_env(), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    text = done.stdout + done.stderr
    # make itself exits 2 when a recipe fails; the recipe's own status is in make's "Error N"
    recipe = 0 if done.returncode == 0 else int(re.search(r"\] Error (\d+)", done.stderr).group(1))
    assert status is None or recipe == status, text
    assert done.stderr.count(RETRY_LINE) == (1 if retried else 0), text
    assert int((tmp_path / "calls").read_text()) == len(acts), text
    if acts[0] == "unstarted":  # the first attempt's own words stay in the output
        assert "listener thread failed to start" in done.stderr.split(RETRY_LINE)[0]
    if status == 3 and retried:
        assert "make run: could not run: the launcher ended with status 213" in done.stderr
    if status == 0:
        assert (out / "verdict.json").exists() and "verdict: pass" in done.stdout
