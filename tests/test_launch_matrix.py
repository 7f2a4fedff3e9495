"""The headline command on every launch a user may try: each ends with a complete run
folder, a page that says what ran and what did not, and its documented exit status.

One short main job (a fault-free scenario, a kill, an emulated cut; one strategy; no
sweep) under Open MPI without fault-tolerance flags, with ``--with-ft ulfm`` alone,
with the full flags, started without a launcher (it launches itself), and under
MPICH's ``mpiexec`` (the PyPI wheel in ``.venv-mpich``, ``make venv MPI=mpich``).
Then ``bench`` under each binding Open MPI offers: oversubscription is judged from
every rank's CPUs, so two ranks on two CPUs are never flagged, four are.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.mpirun import VENV_BIN, mpi_env, run_command

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[1]
MPICH_BIN = Path(os.environ.get("MPIBENCH_MPICH_VENV", ROOT / ".venv-mpich")) / "bin"
SCENARIOS = ("none", "kill-before-compute", "partition-heal")
KILL, CUT = "001-kill-before-compute-ring-shrink", "002-partition-heal-ring-shrink"
JOB_ENV = {"MPIBENCH_SCENARIOS": ",".join(SCENARIOS), "MPIBENCH_STRATEGIES": "ring", "MPIBENCH_NO_SWEEP": "1"}
FULL = ["--oversubscribe", "--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1"]
NEEDS_FT = "--with-ft ulfm"
NEEDS_RECOVERABLE = "--prtemca state_base_recoverable 1 (a killed replacement would end the launch)"

# Three ranks: the fewest that run all three cases (partition-heal needs a majority of two and a
# minority); a fourth rank would only time-share the host's CPUs more. The singleton launch
# picks its own size (the default it gives a user, 4).
RANKS = "3"
# launch id -> (command before `-m mpibench`, exit status, {case not run: what it needs})
LAUNCHES = {
    "plain": ([str(VENV_BIN / "mpirun"), "-n", RANKS, "--oversubscribe"], 4, {KILL: NEEDS_FT, CUT: NEEDS_FT}),
    "ulfm": ([str(VENV_BIN / "mpirun"), "-n", RANKS, "--oversubscribe", "--with-ft", "ulfm"], 4,
             {KILL: NEEDS_RECOVERABLE}),
    "full": ([str(VENV_BIN / "mpirun"), "-n", RANKS, *FULL], 0, {}),
    "singleton": ([], 0, {}),
    "mpich": ([str(MPICH_BIN / "mpiexec"), "-n", RANKS], 4,
              {KILL: "process-fault tolerance, which this MPI (MPICH) does not offer here",
               CUT: "MPI_Comm_revoke, which this MPI (MPICH) does not offer here (a failed step is ended on "
                    "every rank by revoking its communicator)"}),
}


def launch_env(launch: str) -> dict:
    env = {**mpi_env(), **JOB_ENV}
    if launch == "singleton":
        env.pop("MPIBENCH_MPIEXEC", None)  # the launcher beside this Python, found by the job itself
    return env


def python_of(launch: str) -> str:
    if launch != "mpich":
        return sys.executable
    python = MPICH_BIN / "python"
    if not python.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{python} is missing: CI runs 'make venv MPI=mpich' first (.ci/run)")
        pytest.skip(f"no MPICH environment at {MPICH_BIN.parent}: make venv MPI=mpich")
    return str(python)


@pytest.mark.parametrize("launch", list(LAUNCHES))
def test_main_job_on_every_launch(tmp_path, launch):
    prefix, status, not_run = LAUNCHES[launch]
    out = tmp_path / "run"
    cmd = [*prefix, python_of(launch), "-m", "mpibench", "--steps", "4", "--out", str(out)]
    job = run_command(cmd, timeout=240, env=launch_env(launch))
    assert job.returncode == status, job.text[-4000:]
    assert "Traceback" not in job.text
    for name in ("verdict.json", "report.html", "run.json", "steps.csv", "invariants.csv", "bench.csv",
                 "scaling.csv"):
        assert (out / name).exists(), f"{name} missing after {launch}:\n{job.text[-3000:]}"
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "pass"
    info = json.loads((out / "run.json").read_text())
    assert info["not_run"] == not_run and info["launch"]["family"] == ("MPICH" if launch == "mpich" else "Open MPI")
    ran = info["cases"]
    assert len(ran) + len(not_run) == len(SCENARIOS) and not set(ran) & set(not_run)
    for case, needs in not_run.items():
        phase = json.loads((out / "phases" / f"{case}.json").read_text())
        assert phase == {"phase": case, "status": "not_run", "needs": needs}
        assert f"needs {needs}: " in job.stdout
    _page_says_what_ran(out / "report.html", len(ran), len(not_run))
    if launch == "full":
        _sharded_rows_beside_the_allreduce_ones(out)
    if launch == "singleton":
        assert "started without a launcher; running the main job on 4 ranks" in job.stdout
    if not_run:
        assert "to run every case: " in job.stdout and "exit status 4" in job.stdout


def _sharded_rows_beside_the_allreduce_ones(out: Path) -> None:
    """The main job's benchmarks time each sharded strategy's all-reduce and its reduce-scatter
    and all-gather alone, each measured and modelled at every size, with nccl-tests' busbw
    factor ((p-1)/p for the two collectives); the page's bench table lists every one."""
    bench = pd.read_csv(out / "bench.csv", keep_default_na=False)
    sizes = set(bench[bench.strategy == "ring"].bytes)
    names = [f"{s}{part}" for s in ("zero-ring", "zero-halving") for part in ("", ":reduce-scatter", ":all-gather")]
    page = (out / "report.html").read_text()
    section = page[page.index("id='bench'"):]
    for name in names:
        for tag in ("measured", "modelled"):
            rows = bench[(bench.strategy == name) & (bench.tag == tag)]
            assert set(rows.bytes) == sizes and len(rows) == len(sizes), (name, tag, rows)
            p = rows.ranks.astype(int)
            factor = (p - 1) / p * (1 if ":" in name else 2)
            assert (abs(rows.busbw_gbps.astype(float) - rows.algbw_gbps.astype(float) * factor) < 1e-9).all(), name
        assert f"<td>{name}</td>" in section, name


def _page_says_what_ran(page: Path, ran: int, not_run: int) -> None:
    """The launch block sits under the verdict banner, before the case matrix."""
    html = page.read_text()
    start = html.index("<div id='launch'")
    assert html.index('id="verdict"') < start < html.index('id="matrix"')
    block = html[start:html.index("</div></div>", start)]
    if not_run:
        assert f"Ran {ran} of {ran + not_run} planned cases; {not_run} not run" in block
    else:
        assert f"Ran all {ran} planned case(s)." in block


def test_singleton_without_a_launcher_could_not_run(tmp_path):
    env = {**mpi_env(), "MPIBENCH_MPIEXEC": str(tmp_path / "no-such-mpirun")}
    job = run_command([sys.executable, "-m", "mpibench", "--np", "2", "--out", str(tmp_path / "run")],
                      timeout=60, env=env)
    assert job.returncode == 3, job.text
    assert job.stderr.startswith("mpibench: could not run: ") and "no-such-mpirun" in job.stderr
    assert not (tmp_path / "run").exists()


BENCH = ["-m", "mpibench", "bench", "--sizes", "4K", "--iterations", "2", "--rounds", "1", "--warmup", "0",
         "--strategies", "ring", "--no-model", "--c-baseline", "off"]
BINDINGS = {"default": [], "bind-core": ["--bind-to", "core"], "bind-none": ["--bind-to", "none"],
            "ppr-core": ["--map-by", "ppr:1:core"]}


def cpus() -> int:
    return len(os.sched_getaffinity(0))


@pytest.mark.parametrize("ranks,binding", [(2, b) for b in BINDINGS] + [(4, "default")],
                         ids=[f"n2-{b}" for b in BINDINGS] + ["n4-oversubscribed"])
def test_bench_judges_oversubscription_from_every_rank(tmp_path, ranks, binding):
    if cpus() < 2:
        pytest.skip(f"this host lends {cpus()} CPU: two ranks on two CPUs cannot be tried")
    flags = BINDINGS[binding] + (["--oversubscribe"] if ranks > cpus() else [])
    out = tmp_path / "bench"
    cmd = [str(VENV_BIN / "mpirun"), "-n", str(ranks), *flags, sys.executable, *BENCH, "--out", str(out)]
    job = run_command(cmd, timeout=180)
    assert job.returncode == 0, job.text[-3000:]
    rows = pd.read_csv(out / "bench.csv", keep_default_na=False)
    flagged = rows.note.str.contains("oversubscribed")
    hosts = json.loads((out / "run.json").read_text())["host_cpus"]
    assert sum(h["ranks"] for h in hosts) == ranks
    if ranks > cpus():
        assert flagged.all() and f"# oversubscribed: {ranks} ranks time-share" in job.stdout
    else:
        assert not flagged.any(), rows.note.tolist()
        assert all(not h["oversubscribed"] for h in hosts)
