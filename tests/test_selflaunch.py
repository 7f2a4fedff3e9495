"""``python -m mpibench`` without a launcher: a launch that failed before the job began is
tried up to twice more (one line says so each time); a job that began, or a status of the job's
own, is not."""
import json
import sys

import pytest

from mpirun import mpi_env, run_command
from test_sweep import fake_launcher

RETRY_LINE = "before the job began (no run.json was written); trying again in 0 s"
QUICK_RETRIES = {"MPIBENCH_LAUNCH_RETRY_PAUSES_S": "0 0"}  # the product pauses 2 s and 6 s

# The stand-in launcher: ``--version`` and the trial job (``-c``) succeed; the main job's launches act out
# one outcome per call, in order, from the list given to the test.
ACTS = {
    "unstarted": "echo 'The PMIx server listener thread failed to start' >&2; exit 213",
    "began-then-died": 'mkdir -p "$out"; echo "{}" > "$out/run.json"; echo "rank died" >&2; exit 213',
    "verdict-1": "echo 'violation' ; exit 1",
    "ran": 'mkdir -p "$out"; echo "{}" > "$out/run.json"; echo "verdict: pass"; exit 0',
    # The job wrote its verdict and status, and then its launcher never ends (a teardown stuck for ever).
    "outlives-its-status": 'mkdir -p "$out"; echo "{}" > "$out/run.json"; echo "verdict: fail"; '
                           'echo \'{"exit_status": 1}\' > "$out/exit-status.json"; exec sleep 600',
}


def stand_in(tmp_path, acts: list[str], table: dict = ACTS) -> str:
    calls = tmp_path / "calls"
    branches = "\n".join(f'  {i}) {table[a]} ;;' for i, a in enumerate(acts))
    body = (f'for a in "$@"; do case $a in -c|--version) exit 0 ;; esac; done\n'
            'out=; prev=; for a in "$@"; do [ "$prev" = --out ] && out=$a; prev=$a; done\n'
            f'n=$(cat {calls} 2>/dev/null || echo 0); echo $((n + 1)) > {calls}\n'
            '[ -n "$out" ] || out=mpibench-out/run-$n\n'  # the job's own fresh folder without --out
            f'case $n in\n{branches}\n  *) echo "called too often" >&2; exit 99 ;;\nesac')
    return fake_launcher(tmp_path, body)[0]


@pytest.mark.parametrize("acts,status,retries", [
    (["unstarted", "ran"], 0, 1),
    (["unstarted", "unstarted", "ran"], 0, 2),
    (["unstarted", "unstarted", "unstarted"], 3, 2),
    (["began-then-died"], 3, 0),
    (["verdict-1"], 1, 0),
])
@pytest.mark.parametrize("with_out", [True, False])
def test_a_launch_that_began_nothing_is_tried_up_to_twice_more(tmp_path, acts, status, retries, with_out):
    out = tmp_path / "run"
    args = ["--out", str(out)] if with_out else []
    env = {**mpi_env(), **QUICK_RETRIES, "MPIBENCH_MPIEXEC": stand_in(tmp_path, acts)}
    job = run_command([sys.executable, "-m", "mpibench", "--np", "2", *args], timeout=60, env=env, cwd=tmp_path)
    assert job.returncode == status, job.text
    assert job.stderr.count(RETRY_LINE) == retries, job.text
    assert int((tmp_path / "calls").read_text()) == len(acts)  # never a fourth launch
    if acts[0] == "unstarted":  # the first attempt's own words stay in the output
        assert "listener thread failed to start" in job.stderr.split(RETRY_LINE)[0]
    if status == 3:
        assert "mpibench: could not run: the launcher ended with status 213" in job.stderr
    if acts[-1] == "ran":
        made = out if with_out else next(p for p in (tmp_path / "mpibench-out").iterdir())
        assert json.loads((made / "run.json").read_text()) == {}


@pytest.mark.parametrize("with_out", [True, False])
def test_a_launcher_that_outlives_its_jobs_status_is_ended_with_that_status(tmp_path, with_out):
    # The bound is 1 s here (8 s by default); the stand-in would sleep 600 s.
    out = tmp_path / "run"
    env = {**mpi_env(), "MPIBENCH_MPIEXEC": stand_in(tmp_path, ["outlives-its-status"]),
           "MPIBENCH_LAUNCH_AFTER_STATUS_S": "1"}
    job = run_command([sys.executable, "-m", "mpibench", "--np", "2", *(["--out", str(out)] if with_out else [])],
                      timeout=60, env=env, cwd=tmp_path)
    assert job.returncode == 1, job.text
    assert "mpibench: the launcher had not ended 1 s after its job wrote its status (1); ended it" in job.stderr, \
        job.text
    assert RETRY_LINE not in job.stderr
