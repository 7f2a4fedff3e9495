"""`run` under mpirun: CSVs, exit statuses, determinism, bad input."""
import json
import sys

import pytest

from mpibench.cli import usage
from mpirun import mpirun_command, run_cli, run_command, run_mpi

pytestmark = pytest.mark.mpi

NAMES = {"equivalence", "replicas", "accounting", "membership", "data", "coverage", "contract"}


@pytest.mark.parametrize("ranks", [1, 2, 3, 8])
def test_native_run_checks_every_step(tmp_path, ranks):
    job = run_mpi(ranks, ["run", "--strategy", "native", "--steps", "9", "--samples", "300"], tmp_path)
    assert job.returncode == 0, job.text
    steps, checks = job.csv("steps.csv"), job.csv("invariants.csv")
    assert list(steps.step) == list(range(9))
    assert (steps.members.astype(str) == " ".join(map(str, range(ranks)))).all()
    assert set(checks.invariant) == NAMES
    assert len(checks) == 9 * len(NAMES) and (checks.passed.astype(str) == "True").all()
    assert json.loads((tmp_path / "verdict.json").read_text())["verdict"] == "pass"
    assert steps.effective_batch.max() <= ranks * 16
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["ranks"] == ranks and "Open MPI" in info["mpi"]["library"]
    assert info["ulfm"]["active"] is True
    assert "Traceback" not in job.text


def test_same_seed_same_rows(tmp_path):
    frames = []
    for name in ("a", "b"):
        job = run_mpi(3, ["run", "--steps", "6", "--seed", "5"], tmp_path / name)
        assert job.returncode == 0, job.text
        steps = job.csv("steps.csv")
        frames.append(steps[[c for c in steps.columns if not c.endswith("_s")]])
    assert frames[0].equals(frames[1])
    other = run_mpi(3, ["run", "--steps", "6", "--seed", "6"], tmp_path / "c").csv("steps.csv")
    assert not other.loss_mean.equals(frames[0].loss_mean)


def test_check_every_thins_only_the_online_check(tmp_path):
    job = run_mpi(2, ["run", "--steps", "6", "--check-every", "3"], tmp_path)
    assert job.returncode == 0, job.text
    checks = job.csv("invariants.csv")
    assert sorted(set(checks.step)) == list(range(6)) and len(checks) == 6 * len(NAMES)
    equivalence = checks[checks.invariant == "equivalence"].set_index("step").detail
    # The verdict of record compares every step with the reference, whatever --check-every was.
    assert not [s for s in range(6) if "reference skipped" in equivalence[s]]
    assert len(job.csv("steps.csv")) == 6


@pytest.mark.parametrize("args,needle", [
    (["--steps", "0"], "--steps"),
    (["--samples", "2"], "shard"),
    (["--scenario", "no-such-scenario"], "unknown scenario"),
    (["--strategy", "nope"], "unknown strategy"),
    (["--bucket-bytes", "12Q"], "size"),
    (["--device", "tpu"], "device"),
])
def test_bad_input_one_line_exit_2(tmp_path, args, needle):
    keep = tmp_path / "keep.txt"
    keep.write_text("earlier results")
    job = run_mpi(3, ["run", *args], tmp_path, timeout=60)
    assert job.returncode == 2, job.text
    lines = [l for l in job.stderr.splitlines() if l.startswith("mpibench: error")]
    assert len(lines) == 1 and needle in lines[0], job.text
    assert "Traceback" not in job.text
    assert keep.read_text() == "earlier results"


def test_help_lists_commands():
    job = run_cli(["--help"])
    assert job.returncode == 0
    for word in ("run", "scenarios", "--out", "Exit status"):
        assert word in job.stdout


MEETING = """
import os, sys, time
from mpibench.cli import usage
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
started = time.monotonic()
if rank == 0:
    usage.meet_after_the_error_line(deadline_s=float(sys.argv[1]))
else:
    from mpi4py import MPI
    time.sleep(float(sys.argv[2]))
    MPI.COMM_WORLD.Ibarrier().Wait()
print(f"rank {rank} waited {time.monotonic() - started:.2f}")
"""


@pytest.mark.parametrize("deadline_s,late_s,waits", [(20.0, 1.0, True), (0.5, 4.0, False)])
def test_usage_meeting_waits_for_the_other_ranks_but_not_forever(tmp_path, deadline_s, late_s, waits):
    """The first rank's error line is written before the ranks meet; a late rank is waited for up to the deadline."""
    script = tmp_path / "meet.py"
    script.write_text(MEETING)
    job = run_command(mpirun_command() + ["-n", "2", sys.executable, str(script), str(deadline_s), str(late_s)],
                      timeout=60)
    first = [float(l.split()[-1]) for l in job.stdout.splitlines() if l.startswith("rank 0 waited")]
    assert len(first) == 1, job.text
    assert (first[0] >= late_s * 0.9) if waits else (deadline_s * 0.9 <= first[0] < late_s), job.text


@pytest.mark.parametrize("env,size", [
    ({}, 1),
    ({"OMPI_COMM_WORLD_SIZE": "3"}, 3),
    ({"PMI_SIZE": "4"}, 4),
    ({"SLURM_NTASKS": "8"}, 1),  # a batch script's own process is no MPI rank
    ({"SLURM_NTASKS": "8", "PMIX_RANK": "2"}, 8),
])
def test_the_launched_size_counts_only_mpi_ranks(monkeypatch, env, size):
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "PMIX_RANK", "PMI_RANK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert usage.launched_size() == size
