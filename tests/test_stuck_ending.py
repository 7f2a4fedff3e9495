"""A stuck run ends the whole job at once, under ``--with-ft ulfm`` too.

The mechanism: the first rank that finds the run stuck claims the run folder's stuck
mark (``crashes/stuck.json``) and speaks; every other rank leaves on that mark with
status 1, whether its folder watch sees it (a rank hung where no deadline reaches it)
or it finds the run stuck itself (it leaves without a second line). Under
``--with-ft ulfm`` the abort of the rank that speaks is not relied on to end the others.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mpibench.base.crash_record import claim_stuck, stuck_rank
from tests.mpirun import VENV_BIN, reap_survivors
from tests.test_crash_ending import crash_env, run_command

FULL = [str(VENV_BIN / "mpirun"), "-n", "3", "--oversubscribe", "--with-ft", "ulfm", "--prtemca",
        "state_base_recoverable", "1"]
WITHIN_S = 120  # the hung rank alone would keep the launch for 600 s

# A rank as a launcher starts it (the launcher's variables set), its folder noted, then hung.
HUNG_RANK = ("import sys, time; from mpibench.base.folder_watch import note_run_folder; "
             "note_run_folder(sys.argv[1]); print('watching', flush=True); time.sleep(120)")


def test_the_first_rank_to_find_the_run_stuck_claims_the_mark(tmp_path):
    assert stuck_rank(str(tmp_path)) is None
    assert claim_stuck(str(tmp_path), 2, "no answer within 2 s")
    assert not claim_stuck(str(tmp_path), 0, "no answer within 2 s")  # a later rank says nothing
    assert stuck_rank(str(tmp_path)) == "2"


def test_a_hung_rank_leaves_with_status_1_on_the_stuck_mark(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_RANK": "1",
           "PYTHONPATH": str(VENV_BIN.parent.parent)}
    rank = subprocess.Popen([sys.executable, "-c", HUNG_RANK, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert rank.stdout.readline() == "watching\n"
        claim_stuck(str(tmp_path), 0, "no answer within 2 s")
        _, stderr = rank.communicate(timeout=30)  # it would sleep 120 s
    finally:
        rank.kill()
    assert rank.returncode == 1, stderr
    assert "rank 1 (pid" in stderr and "rank 0 found the run stuck: leaving with status 1" in stderr, stderr


@pytest.mark.mpi
def test_a_run_whose_peer_never_answers_is_judged_unknown_naming_the_silent_rank(tmp_path):
    # Worker 1 hangs (sleeps 600 s without dying) in its second ring reduction (the plant in
    # tests/plugins/crashing); its peers get no answer within the 2 s deadline. The run cannot
    # be judged (its history stops short): exit 3 with verdict.json and the page, as the
    # simulated engine ends it, and the last line names the wait on the silent rank.
    out = tmp_path / "run"
    env = crash_env(MPIBENCH_TEST_STALL="1:2")
    env.pop("MPIBENCH_TEST_CRASH")
    job = run_command([*FULL, str(VENV_BIN / "python"), "-m", "mpibench", "run", "--strategy", "ring", "--scenario",
                       "none", "--steps", "6", "--deadline-s", "2", "--out", str(out)],
                      timeout=WITHIN_S, env=env, cwd=tmp_path)
    assert job.returncode == 3, job.text[-3000:]
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "unknown"
    last = job.stdout.strip().splitlines()[-1]
    assert last.startswith("mpibench: PeerLate: no answer within 2 s: rank "), job.text[-3000:]
    assert "from rank 1" in last or "to rank 1" in last, last  # the wait on the hung rank
    assert "made no progress" not in job.stderr, job.text[-3000:]  # ended before its step watchdog could
    assert "Traceback" not in job.text
    # No rank outlived the launch (one left to its orphan guard would still be here: it polls once a second).
    assert not reap_survivors(job.tag, grace_s=0.5)


@pytest.mark.mpi
def test_a_member_hung_between_its_last_step_and_the_verdict_ends_the_job_with_status_1(tmp_path):
    # Worker 1 hangs as it closes its history (the plant); the others wait for it in the
    # barrier before the check, which has no deadline. The case's finish bound (3 s here,
    # 60 s by default) ends every member with one line and status 1: never a pass, never for ever.
    out = tmp_path / "run"
    env = crash_env(MPIBENCH_TEST_HANG_AFTER_LOOP="1", MPIBENCH_FINISH_BUDGET_S="3")
    env.pop("MPIBENCH_TEST_CRASH")
    job = run_command([*FULL, str(VENV_BIN / "python"), "-m", "mpibench", "run", "--strategy", "ring", "--scenario",
                       "none", "--steps", "4", "--out", str(out)], timeout=WITHIN_S, env=env, cwd=tmp_path)
    assert job.returncode == 1, job.text[-3000:]
    assert "stuck: the case did not finish after its last step" in job.stderr, job.text[-3000:]
    assert "for 3 s" in job.stderr and "Traceback" not in job.text, job.text[-3000:]
    assert not (out / "verdict.json").exists()  # nothing was judged: no verdict claimed
    assert not reap_survivors(job.tag, grace_s=0.5)
