"""``make run``: a launch that failed before the job began is tried up to twice more (one line
says so each time); a job that began, or a status of the job's own, is not. The stand-in launcher of
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
RETRY_LINE = ("make run: the launcher ended with status 213 before the job began (no run.json was written); "
              "trying again in 0 s")


@pytest.mark.parametrize("acts,status,retries", [
    (["unstarted", "ran"], 0, 1),
    (["unstarted", "unstarted", "ran"], 0, 2),
    (["unstarted", "unstarted", "unstarted"], 3, 2),  # could not run
    (["began-then-died"], 3, 0),  # make's check cannot judge the folder
    (["verdict-1"], None, 0),  # the job's own status: make's check decides
])
def test_make_run_tries_a_launch_that_began_nothing_up_to_twice_more(tmp_path, acts, status, retries):
    honest = build(tmp_path / "honest")
    table = {**ACTS, "ran": f'mkdir -p "$out"; cp -r {honest}/. "$out"/; echo "verdict: pass"; exit 0'}
    out = tmp_path / "made"
    done = subprocess.run(["make", "-s", "run", f"MPIRUN={stand_in(tmp_path, acts, table)}", "NP=2", f"OUT={out}"],
                          cwd=ROOT, env={**mpi_env(), "MPIBENCH_LAUNCH_RETRY_PAUSES_S": "0 0"},  # the product pauses 2 s, 6 s
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    text = done.stdout + done.stderr
    # make itself exits 2 when a recipe fails; the recipe's own status is in make's "Error N"
    recipe = 0 if done.returncode == 0 else int(re.search(r"\] Error (\d+)", done.stderr).group(1))
    assert status is None or recipe == status, text
    assert done.stderr.count(RETRY_LINE) == retries, text
    assert int((tmp_path / "calls").read_text()) == len(acts), text
    if acts[0] == "unstarted":  # the first attempt's own words stay in the output
        assert "listener thread failed to start" in done.stderr.split(RETRY_LINE)[0]
    if status == 3 and retries:
        assert "make run: could not run: the launcher ended with status 213" in done.stderr
    if status == 0:
        assert (out / "verdict.json").exists() and "verdict: pass" in done.stdout
