"""The Slurm job scripts in ``jobs/``, submitted to a real throw-away Slurm cluster.

One single-node cluster (munge + slurmctld + slurmd, see ``slurm_cluster.py``)
serves the whole module; every script is submitted with ``sbatch --wait`` at 4
and 8 tasks and judged by its exit status and the CSVs it leaves. Scripts are
submitted by absolute path from a folder outside the checkout, so they must
find the project by themselves.

Without Slurm these tests skip with the reason; under ``CI=true`` a missing
Slurm fails them instead, so CI can never pass by skipping. The full main job
(minutes here) is marked slow: `make test-slow` runs it, `make test` leaves it out.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import slurm_cluster

ROOT = Path(__file__).resolve().parent.parent
JOBS = ROOT / "jobs"
SCRIPTS = sorted(JOBS.glob("*.sbatch")) + [JOBS / "common.sh"]
SMALL = ["--steps", "5"]  # a short run is enough to see outputs and exit codes


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- without Slurm
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses_and_is_strict(script):
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text()
    if script.suffix == ".sbatch":
        assert "set -euo pipefail" in text
        assert text.startswith("#!/usr/bin/env bash\n# "), "header comment says what it runs"
    assert "/work/" not in text and "/home/" not in text, "no paths of one machine"


def write_part(folder: Path, rows: list[dict], status: int | None = 0) -> Path:
    folder.mkdir(parents=True)
    with (folder / "sweep.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    if status is not None:
        (folder / "exit_status").write_text(f"{status}\n")
    return folder


def merge(tmp_path: Path, *parts: Path, expect: int | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(JOBS / "merge_parts.py"), "--name", "sweep.csv", "--out",
           str(tmp_path), "--require", "violations=0", "--require", "outcome=ok", "--show-column", "replay"]
    cmd += ["--expect", str(expect)] if expect is not None else []
    return subprocess.run(cmd + [str(p) for p in parts], capture_output=True, text=True)


def test_merge_concatenates_slices_with_their_names(tmp_path):
    a = write_part(tmp_path / "slice-0", [{"case": "0", "violations": "0", "replay": "r0"}])
    b = write_part(tmp_path / "slice-1", [{"case": "1", "violations": "0", "replay": "r1"},
                                          {"case": "2", "violations": "0", "replay": "r2"}])
    done = merge(tmp_path, a, b, expect=2)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = read_csv(tmp_path / "sweep.csv")
    assert [(r["part"], r["case"]) for r in rows] == [("slice-0", "0"), ("slice-1", "1"),
                                                      ("slice-1", "2")]


@pytest.mark.parametrize("defect", ["violation", "crash", "failed task", "missing csv",
                                    "missing slice"])
def test_merge_fails_on_any_bad_slice(tmp_path, defect):
    good = write_part(tmp_path / "slice-0", [{"case": "0", "violations": "0", "replay": "r0"}])
    bad_rows = [{"case": "1", "violations": "3" if defect == "violation" else "0",
                 "outcome": "crash" if defect == "crash" else "ok", "replay": "mpirun ... --seed 1"}]
    bad = write_part(tmp_path / "slice-1", bad_rows, status=1 if defect == "failed task" else 0)
    if defect == "missing csv":
        (bad / "sweep.csv").unlink()
    parts = [good] if defect == "missing slice" else [good, bad]
    done = merge(tmp_path, *parts, expect=2)
    assert done.returncode == 1, done.stdout + done.stderr
    if defect in ("violation", "crash"):
        assert "mpirun ... --seed 1" in done.stdout, "the replay command is printed"


# ---------------------------------------------------------------- the cluster
@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = slurm_cluster.missing()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but no Slurm test cluster can start: {reason}")
        pytest.skip(reason)
    with slurm_cluster.SlurmCluster(tmp_path_factory.mktemp("slurm"), cpus=8) as running:
        yield running


@pytest.fixture
def submit(cluster, tmp_path):
    """``submit(script, *args, tasks=N, env={...})``: sbatch --wait from a folder outside the checkout."""
    def run(script: str, *args: str, tasks: int = 4, env: dict | None = None,
            options: tuple[str, ...] = (), timeout_s: float = 120) -> slurm_cluster.Submitted:
        job_env = {"MPIBENCH_OUT": str(tmp_path / "results"), **(env or {})}

        def once():
            return cluster.sbatch(JOBS / script, *args, workdir=tmp_path, env=job_env,
                                  options=[f"--ntasks={tasks}", *options], timeout_s=timeout_s)

        job = once()
        if slurm_cluster.step_never_launched(job.log):
            job = once()  # slurmd failed to start the step's tasks: nothing of the job ran
        return job

    run.results = tmp_path / "results"
    return run


def check_run_folder(out: Path, ranks: int, ulfm: bool) -> None:
    """The folder a passing run leaves: steps, every check passed, run.json saying how it ran."""
    assert len(read_csv(out / "steps.csv")) >= 5
    checks = read_csv(out / "invariants.csv")
    assert checks and {c["passed"] for c in checks} == {"true"}
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "pass"
    info = json.loads((out / "run.json").read_text())
    assert info["ranks"] == ranks
    assert info["ulfm"]["active"] is ulfm


# Kill scenarios need ULFM, which Open MPI has only under mpirun --with-ft ulfm:
# these runs prove it works inside a Slurm allocation, respawn included.
FAULT_RUNS = [(4, ["--strategy", "ring", "--scenario", "kill-mid-reduction"]),
              (8, ["--strategy", "ps", "--scenario", "kill-before-compute", "--recovery", "respawn"])]


@pytest.mark.slurm
@pytest.mark.parametrize("tasks,args", FAULT_RUNS, ids=["4-ring-kill", "8-ps-kill-respawn"])
def test_fault_run_with_embedded_mpirun(submit, tasks, args):
    job = submit("mpibench.sbatch", "run", *args, *SMALL, tasks=tasks)
    assert job.returncode == 0, job.text
    out = submit.results / f"mpibench-{job.job_id}"
    check_run_folder(out, tasks, ulfm=True)
    assert f"{tasks} tasks" in job.log and "launcher: mpirun" in job.log
    kills = [f for f in read_csv(out / "faults.csv") if f["kind"] == "kill"]
    assert len(kills) == 1, "the scheduled rank really died"


@pytest.mark.slurm
@pytest.mark.slow  # the full main job takes minutes here: `make test-slow` runs it (never a silent skip)
def test_full_main_job(submit):
    job = submit("mpibench.sbatch", *SMALL, tasks=4, timeout_s=500)
    assert job.returncode == 0, job.text
    out = submit.results / f"mpibench-{job.job_id}"
    check_run_folder(out, 4, ulfm=True)
    assert (out / "report.html").exists() and (out / "comparison.csv").exists()


@pytest.mark.slurm
def test_main_job_with_srun_pmix(submit):
    """The site-MPI route: direct launch by srun --mpi=pmix (a fault-free run: no ULFM there)."""
    job = submit("mpibench.sbatch", "run", "--strategy", "native", *SMALL, tasks=4,
                 env={"MPIBENCH_LAUNCH": "srun"})
    assert job.returncode == 0, job.text
    check_run_folder(submit.results / f"mpibench-{job.job_id}", 4, ulfm=False)
    assert "launcher: srun" in job.log


MPICH_VENV = Path(__file__).resolve().parents[1] / ".venv-mpich"


def mpich_env(launch: str) -> dict:
    if not (MPICH_VENV / "bin" / "python").exists():
        pytest.skip("no .venv-mpich: make venv MPI=mpich")
    return {"MPIBENCH_VENV": str(MPICH_VENV), "MPIBENCH_LAUNCH": "srun" if launch == "srun-pmi2" else "mpirun",
            "MPIBENCH_SRUN_MPI": "pmi2"}


@pytest.mark.slurm
@pytest.mark.parametrize("launch", ["srun-pmi2", "hydra"])
def test_mpich_run_under_slurm(submit, launch):
    """An MPICH-family MPI (the PyPI wheel, make venv MPI=mpich): srun --mpi=pmi2 and its
    own mpiexec inside the allocation; a fault-free run passes."""
    job = submit("mpibench.sbatch", "run", "--strategy", "ring", *SMALL, tasks=4, env=mpich_env(launch))
    assert job.returncode == 0, job.text
    check_run_folder(submit.results / f"mpibench-{job.job_id}", 4, ulfm=False)


# Under srun --mpi=pmi2 this job hung after its start in 2 of 3 full test runs on the 2-core
# machine, never alone (FINDINGS: mpich-srun-pmi2-kill-job-hang, cause not found): it runs
# in make test-slow until that is understood; under MPICH's own mpiexec it runs in make test.
@pytest.mark.slurm
@pytest.mark.parametrize("launch", [pytest.param("srun-pmi2", marks=pytest.mark.slow), "hydra"])
def test_mpich_kill_is_left_out_under_slurm(submit, launch):
    """A kill under an MPI without process-fault tolerance is left out (4), never a pass."""
    killed = submit("mpibench.sbatch", "run", "--strategy", "ring", "--scenario", "kill-before-compute", *SMALL,
                    tasks=4, env=mpich_env(launch))
    # The job exits 4 (its one case left out); the script's status is then the checker's
    # answer for a folder in which nothing ran, never a pass.
    assert killed.returncode in (3, 4), killed.text
    assert "needs process-fault tolerance, which this MPI (MPICH) does not offer here" in killed.log


# A violated invariant (exit 1, through a known-bad reduction) and bad usage (exit 2)
# must each fail the job, under either launcher.
FAILING = {"violation-mpirun": ("mpirun", ["--run-parts", "mpibench.selftest.variants:unweighted",
                                           "--scenario", "short-epochs"], "violation: invariant"),
           "usage-mpirun": ("mpirun", ["--steps", "-3"], "mpibench: error:"),
           "usage-srun": ("srun", ["--steps", "-3"], "mpibench: error:")}


@pytest.mark.slurm
@pytest.mark.parametrize("case", FAILING)
def test_failing_suite_fails_the_job(submit, case):
    launch, args, message = FAILING[case]
    job = submit("mpibench.sbatch", "run", "--strategy", "ring", *SMALL, *args, tasks=4,
                 env={"MPIBENCH_LAUNCH": launch})
    assert job.returncode != 0, job.text
    assert message in job.log


@pytest.mark.slurm
def test_bad_launcher_is_a_one_line_error(submit):
    job = submit("mpibench.sbatch", *SMALL, tasks=4, env={"MPIBENCH_LAUNCH": "aprun"})
    assert job.returncode == 2, job.text
    assert "MPIBENCH_LAUNCH must be mpirun or srun" in job.log


# ---------------------------------------------------------------- the sweep as a job array
SWEEP_SLICE = ["--workers", "2,4", "--strategies", "ring", "--steps", "5", "--shrink-runs", "0"]


def sweep_array_and_merge(cluster, tmp_path, slice_args, tasks: int = 2):
    """Submit the array (no wait) and the merge after it (waits for both); return both."""
    env = {"MPIBENCH_OUT": str(tmp_path / "results"), "MPIBENCH_SWEEP_SEEDS": "1"}
    array = cluster.sbatch(JOBS / "sweep-array.sbatch", *slice_args, workdir=tmp_path, env=env,
                           options=[f"--array=0-{tasks - 1}", "--ntasks=4"], wait=False)
    assert array.returncode == 0 and array.job_id, array.text
    merged = cluster.sbatch(JOBS / "sweep-merge.sbatch", str(array.job_id), workdir=tmp_path,
                            env=env, options=[f"--dependency=afterany:{array.job_id}"])
    logs = "\n".join(p.read_text() for p in sorted(tmp_path.glob(f"slurm-{array.job_id}_*.out")))
    return array, merged, logs, tmp_path / "results" / f"sweep-{array.job_id}"


@pytest.mark.slurm
def test_sweep_array_slices_seeds_and_merges(cluster, tmp_path):
    array, merged, logs, out = sweep_array_and_merge(cluster, tmp_path, SWEEP_SLICE)
    assert merged.returncode == 0, merged.text + logs
    rows = read_csv(out / "sweep.csv")
    # one seed per task, two worker counts: each task swept its own seed
    assert sorted((r["part"], r["seed"], r["workers"]) for r in rows) == [
        ("slice-0", "0", "2"), ("slice-0", "0", "4"), ("slice-1", "1", "2"), ("slice-1", "1", "4")]
    assert {r["outcome"] for r in rows} == {"ok"}
    assert all(r["replay"] for r in rows)
    assert (out / "report.html").exists()


@pytest.mark.slurm
def test_failing_sweep_fails_the_merge(cluster, tmp_path):
    array, merged, logs, out = sweep_array_and_merge(cluster, tmp_path, ["--steps", "-1"])
    assert merged.returncode == 1, merged.text + logs
    assert "problem: slice-0" in merged.log and "problem: slice-1" in merged.log


# ---------------------------------------------------------------- scaling
@pytest.mark.slurm
@pytest.mark.parametrize("tasks", [4, 8])
def test_scaling_job_runs_each_node_count_and_merges(submit, tasks):
    bench = ["bench", "--sizes", "4K,64K", "--strategies", "ring,native", "--iterations", "3"]
    job = submit("scaling.sbatch", *bench, tasks=tasks)
    assert job.returncode == 0, job.text
    out = submit.results / f"scaling-{job.job_id}"
    assert (out / "nodes-1" / "exit_status").read_text().strip() == "0"
    rows = [r for r in read_csv(out / "bench.csv") if r["tag"] == "measured"]
    # the asked strategies beside the blocking baseline (and the C floor where mpicc builds it)
    points = {(r["part"], r["ranks"], r["strategy"]) for r in rows}
    wanted = {("nodes-1", str(tasks), s) for s in ("ring", "native", "blocking")}
    assert wanted <= points <= wanted | {("nodes-1", str(tasks), "c_floor")}
    assert {r["errors"] for r in rows} == {"0"}
    assert (out / "report.html").exists()


@pytest.mark.slurm
def test_failing_scaling_point_fails_the_job(submit):
    job = submit("scaling.sbatch", "bench", "--sizes", "4X", tasks=4)
    assert job.returncode != 0, job.text
    assert (submit.results / f"scaling-{job.job_id}" / "nodes-1" / "exit_status").read_text() != "0\n"
