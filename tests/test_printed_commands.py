"""Every printed command pastes: collected from every output, run from another folder with a bare PATH.

Each job is launched two ways a user launches: with the project venv's ``mpirun`` on the
PATH (bare names), and as a cluster user does, with another virtual environment's Python
(no ``mpirun`` beside it) and the launcher named by its full path with the full flags.
Every command the job printed or wrote (console, verdict.json, sweep.csv, findings.csv,
the page) is then run as pasted from an empty folder with ``PATH=/usr/bin:/bin`` (root's
two Open MPI variables kept), and must give the rows its source recorded (the ``_s``
columns aside).
"""
from __future__ import annotations

import csv
import html
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mpirun import VENV_BIN, mpi_env, run_command

pytestmark = pytest.mark.mpi

FLAGS = ["--oversubscribe", "--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1"]
PASTE_TIMEOUT_S = 240
SITE = Path(sys.executable).parent.parent / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" \
    / "site-packages"


@pytest.fixture(scope="module")
def other_python(tmp_path_factory) -> str:
    """A second virtual environment (no mpirun in it) that sees the project's packages."""
    root = tmp_path_factory.mktemp("other-venv") / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(root)],
                   check=True, timeout=120)
    site = next((root / "lib").glob("python*/site-packages"))
    (site / "project.pth").write_text(f"import site; site.addsitedir({str(SITE)!r})\n")
    return str(root / "bin" / "python")


def launch(way: str, other_python: str, ranks: int, args: list[str]) -> tuple[list[str], dict]:
    """The command and environment of one launch, the way a user of that kind types it."""
    env = mpi_env()
    env.pop("MPIBENCH_MPIEXEC", None)
    if way == "path":  # the venv's bin on the PATH, names typed bare
        env["PATH"] = f"{VENV_BIN}{os.pathsep}/usr/bin:/bin"
        return ["mpirun", "-n", str(ranks), *FLAGS, "python", "-m", "mpibench", *args], env
    env["PATH"] = "/usr/bin:/bin"
    return [str(VENV_BIN / "mpirun"), "-n", str(ranks), *FLAGS, other_python, "-m", "mpibench", *args], env


def paste_env() -> dict:
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def _json_commands(value, source: str, found: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("replay", "minimal", "full_command") and isinstance(item, str) and "-m mpibench" in item:
                found.setdefault(item, set()).add(source)
            else:
                _json_commands(item, source, found)
    elif isinstance(value, list):
        for item in value:
            _json_commands(item, source, found)


def commands_in(folder: Path, console: str) -> dict[str, set]:
    """Every command in the job's outputs -> the outputs it was found in."""
    found: dict[str, set] = {}
    for line in console.splitlines():
        for marker in ("replay: ", "to run every case: "):
            if marker in line and "-m mpibench" in line:
                found.setdefault(line.split(marker, 1)[1].strip(), set()).add("console")
    for path in folder.rglob("*.json"):
        try:
            _json_commands(json.loads(path.read_text()), path.name, found)
        except ValueError:
            continue
    for path in folder.rglob("*.csv"):
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                for key in ("replay", "minimal_replay", "batch_replay"):
                    if "-m mpibench" in (row.get(key) or ""):
                        found.setdefault(row[key], set()).add(path.name)
    for path in folder.rglob("report.html"):
        page = path.read_text().split("Known defects (FINDINGS.toml)")[0]  # hand-written history, not this run
        for code in re.findall(r"<code>(.*?)</code>", page, re.S):
            if "-m mpibench" in code:
                found.setdefault(html.unescape(code), set()).add(path.name)
    return found


def rows(folder: Path, cases: set | None = None) -> dict[str, list[dict]]:
    """The correctness rows of a run folder (of ``cases`` only), wall-clock columns left out."""
    kept = {}
    for name in ("invariants.csv", "steps.csv"):
        with open(folder / name, newline="") as fh:
            kept[name] = [{k: v for k, v in r.items() if not k.endswith("_s")} for r in csv.DictReader(fh)
                          if cases is None or (r["scenario"], r["strategy"]) in cases]
    return kept


def cases_in(found_rows: dict) -> set:
    return {(r["scenario"], r["strategy"]) for r in found_rows["invariants.csv"]}


def out_of(command: str, cwd: Path) -> Path:
    words = shlex.split(command)
    return Path(words[words.index("--out") + 1]) if "--out" in words else cwd / "mpibench-out" / "latest"


def sources(found: dict[str, set]) -> set:
    return set().union(*found.values()) if found else set()


def paste_each(commands: dict[str, set], recorded_for, tmp_path: Path) -> None:
    """Run each command as pasted; its folder must hold the rows ``recorded_for(command)`` holds."""
    assert commands, "no command was found in any output"
    for i, (command, source) in enumerate(sorted(commands.items())):
        source = ", ".join(sorted(source))
        cwd = tmp_path / f"paste-{i}"
        cwd.mkdir()
        done = subprocess.run(command, shell=True, cwd=cwd, env=paste_env(), capture_output=True, text=True,
                              timeout=PASTE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        recorded = recorded_for(command)
        assert done.returncode == json.loads((recorded / "verdict.json").read_text())["exit_status"], \
            f"{source}: {command}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        again = rows(out_of(command, cwd))
        assert again["invariants.csv"], f"{source}: {command} judged nothing"
        assert again == rows(recorded, cases_in(again)), f"{source}: {command}"


WAYS = ["path", "full-path"]


@pytest.mark.parametrize("way", WAYS)
def test_run_with_a_violation_prints_replays_that_paste(tmp_path, other_python, way):
    out = tmp_path / "run"
    cmd, env = launch(way, other_python, 3, ["run", "--strategy", "native", "--mutant", "skip-member", "--steps",
                                             "3", "--out", str(out)])
    job = run_command(cmd, timeout=180, env=env, cwd=tmp_path)
    assert job.returncode == 1, job.text[-3000:]
    run_command([sys.executable, "-m", "mpibench", "report", str(out)], timeout=120)
    found = commands_in(out, job.text)
    assert {"console", "verdict.json", "case.json", "report.html"} <= sources(found), found
    paste_each(found, lambda command: out, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("way", WAYS)
def test_sweep_rows_replay_as_pasted(tmp_path, other_python, way):
    out = tmp_path / "sweep"
    launcher = "mpirun" if way == "path" else str(VENV_BIN / "mpirun")
    cmd, env = launch(way, other_python, 1, [])
    python = "python" if way == "path" else other_python
    job = run_command([python, "-m", "mpibench", "sweep", "--seeds", "2", "--workers", "3", "--strategies", "ring",
                       "--steps", "4", "--mpiexec", shlex.join([launcher, *FLAGS]), "--out", str(out)],
                      timeout=400, env=env, cwd=tmp_path)
    assert job.returncode in (0, 1), job.text[-3000:]
    found = commands_in(out, job.text)
    assert "sweep.csv" in sources(found), found
    paste_each(found, lambda command: out_of(command, tmp_path).parent / "run", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("way", WAYS)
def test_the_main_jobs_commands_paste(tmp_path, other_python, way):
    out = tmp_path / "main"
    cmd, env = launch(way, other_python, 3, ["--steps", "4", "--out", str(out)])
    env.update(MPIBENCH_SCENARIOS="none,kill-before-compute", MPIBENCH_STRATEGIES="ring", MPIBENCH_NO_SWEEP="1")
    job = run_command(cmd, timeout=400, env=env, cwd=tmp_path)
    assert job.returncode == 0, job.text[-3000:]
    found = commands_in(out, job.text)
    assert "case.json" in sources(found), found  # each case's replay, kept with its history
    paste_each(found, lambda command: out, tmp_path)
