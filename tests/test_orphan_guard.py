"""A process a launcher started ends once its launcher is gone, and only then."""
import os
import signal
import subprocess
import sys
import time

import pytest

from mpibench.base.exits import EXIT_COULD_NOT_RUN

# The rank: arms the guard (a fast poll), says so, then sleeps LIVE_S seconds and exits 0.
RANK = ("import sys, time; from mpibench.base.orphan_guard import guard_if_launched; "
        "armed = guard_if_launched(poll_s=0.1); print('armed' if armed else 'unarmed', flush=True); "
        "time.sleep(float(sys.argv[1]))")
# The launcher: starts the rank with its stdout and stderr in files, prints its pid, then waits.
LAUNCHER = ("import subprocess, sys; rank = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]], "
            "stdout=open(sys.argv[3], 'w'), stderr=open(sys.argv[4], 'w')); print(rank.pid, flush=True); "
            "sys.exit(rank.wait())")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def launch(tmp_path, env_extra: dict, live_s: float):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    env.update(env_extra)
    out, err = tmp_path / "rank.out", tmp_path / "rank.err"
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, RANK, str(live_s), str(out), str(err)],
                                stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)
    rank_pid = int(launcher.stdout.readline())
    deadline = time.monotonic() + 30
    while "armed" not in out.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return launcher, rank_pid, out, err


def gone_within(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


@pytest.mark.parametrize("variable", ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"])
def test_a_rank_whose_launcher_was_killed_ends_with_one_line(tmp_path, variable):
    launcher, rank, out, err = launch(tmp_path, {variable: "0"}, live_s=60)
    assert out.read_text().strip() == "armed"
    launcher.kill()  # SIGKILL: the rank is reparented, as a rank in its own process group is
    launcher.wait()
    assert gone_within(rank, 10), f"rank {rank} outlived its launcher"
    lines = err.read_text().splitlines()
    assert len(lines) == 1 and "its launcher" in lines[0] and f"exit {EXIT_COULD_NOT_RUN}" in lines[0], lines


def test_a_rank_with_its_launcher_alive_runs_to_its_end(tmp_path):
    launcher, rank, out, err = launch(tmp_path, {"PMIX_RANK": "0"}, live_s=1.5)
    assert launcher.wait(timeout=30) == 0  # the rank's own status: it was never ended early
    assert out.read_text().strip() == "armed" and err.read_text() == ""


def test_a_process_no_launcher_started_is_left_alone(tmp_path):
    launcher, rank, out, err = launch(tmp_path, {}, live_s=60)
    try:
        assert out.read_text().strip() == "unarmed"
        launcher.kill()
        launcher.wait()
        assert not gone_within(rank, 1.0)  # ten polls of an armed guard: still running
    finally:
        os.kill(rank, signal.SIGKILL)
