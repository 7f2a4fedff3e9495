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

from tests.mpirun import VENV_BIN, mpi_env, again_if_never_started, run_command

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
    """A clean shell: a bare PATH and a home, nothing else (root's Open MPI permission
    too must come from the command itself)."""
    return {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}


ORIGIN: dict[str, Path] = {}  # command -> the run folder whose output held it first


def _note(found: dict, command: str, source: str, path: Path) -> None:
    found.setdefault(command, set()).add(source)
    folder = path.parent
    while not (folder / "verdict.json").exists() and len(folder.parts) > 2:  # up to the run folder
        folder = folder.parent
    ORIGIN.setdefault(command, folder)


def _json_commands(value, path: Path, found: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("replay", "minimal", "full_command") and isinstance(item, str) and "-m mpibench" in item:
                _note(found, item, path.name, path)
            else:
                _json_commands(item, path, found)
    elif isinstance(value, list):
        for item in value:
            _json_commands(item, path, found)


def commands_in(folder: Path, console: str) -> dict[str, set]:
    """Every command in the job's outputs -> the outputs it was found in."""
    found: dict[str, set] = {}
    for line in console.splitlines():
        for marker in ("replay: ", "to run every case: "):
            if marker in line and "-m mpibench" in line:
                _note(found, line.split(marker, 1)[1].strip(), "console", folder / "verdict.json")
    for path in folder.rglob("*.json"):
        try:
            _json_commands(json.loads(path.read_text()), path, found)
        except ValueError:
            continue
    for path in folder.rglob("*.csv"):
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                for key in ("replay", "minimal_replay", "batch_replay"):
                    if "-m mpibench" in (row.get(key) or ""):
                        _note(found, row[key], path.name, path)
    for path in folder.rglob("report.html"):
        page = path.read_text()
        for code in re.findall(r"<code>(.*?)</code>", page, re.S):
            if "-m mpibench" in code:
                _note(found, html.unescape(code), path.name, path)
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


def recorded_for(command: str) -> Path:
    """The folder whose rows a pasted command must give: a case's run beside its ``replay``
    folder, else the run folder whose output held the command."""
    words = shlex.split(command)
    if "--out" in words and Path(words[words.index("--out") + 1]).name == "replay":
        return Path(words[words.index("--out") + 1]).parent / "run"
    return ORIGIN[command]


def _out_arg(args: list[str]) -> Path:
    return Path(args[args.index("--out") + 1])


def pairs_of(command: str, cwd: Path) -> list[tuple[Path, Path]]:
    """(folder the pasted command writes, folder whose rows it must give), per run it makes;
    a batch replay makes one per case of its plan (the originals in the batch's plan.json)."""
    words = shlex.split(command)
    if "batch" in words:
        plan = Path(words[-1])
        again = json.loads(plan.read_text())["cases"]
        first = {c["case"]: c for c in json.loads((plan.parent / "plan.json").read_text())["cases"]}
        return [(_out_arg(c["args"]), _out_arg(first[c["case"]]["args"])) for c in again]
    return [(out_of(command, cwd), recorded_for(command))]


def paste_each(commands: dict[str, set], tmp_path: Path) -> None:
    """Run each command as pasted; each folder it writes must hold the rows its source recorded."""
    assert commands, "no command was found in any output"
    for i, (command, source) in enumerate(sorted(commands.items())):
        source = ", ".join(sorted(source))
        cwd = tmp_path / f"paste-{i}"
        cwd.mkdir()
        done = again_if_never_started(lambda: subprocess.run(  # noqa: B023 - called at once
            command, shell=True, cwd=cwd, env=paste_env(), capture_output=True, text=True,
            timeout=PASTE_TIMEOUT_S, stdin=subprocess.DEVNULL))
        said = f"{source}: {command}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        for written, recorded in pairs_of(command, cwd):
            assert (recorded / "verdict.json").exists(), f"{source}: no run folder recorded {command}"
            if "batch" not in shlex.split(command):  # a batch's own status is not one case's
                assert done.returncode == json.loads((recorded / "verdict.json").read_text())["exit_status"], said
            again = rows(written)
            assert again["invariants.csv"], f"{said}\njudged nothing in {written}"
            assert again == rows(recorded, cases_in(again)), said


WAYS = ["path", "full-path"]


@pytest.mark.parametrize("way", [pytest.param("path", marks=pytest.mark.slow), "full-path"])
def test_run_with_a_violation_prints_replays_that_paste(tmp_path, other_python, way):
    out = tmp_path / "run"
    cmd, env = launch(way, other_python, 3, ["run", "--strategy", "native", "--run-parts",
                                             "mpibench.selftest.variants:skip-member", "--steps",
                                             "3", "--out", str(out)])
    job = run_command(cmd, timeout=180, env=env, cwd=tmp_path)
    assert job.returncode == 1, job.text[-3000:]
    run_command([sys.executable, "-m", "mpibench", "report", str(out)], timeout=120)
    found = commands_in(out, job.text)
    assert {"console", "verdict.json", "case.json", "report.html"} <= sources(found), found
    paste_each(found, tmp_path)


# Open MPI's non-blocking Allreduce as a ring: at three ranks it adds in another order than
# the default, so the same run gives other losses (checked: two of three steps' rows differ).
RING_NBC = {"OMPI_MCA_coll_libnbc_iallreduce_algorithm": "1"}


def test_a_replay_carries_the_mpi_settings_that_chose_its_sums(tmp_path, other_python):
    out, default = tmp_path / "run", tmp_path / "default"
    args = ["run", "--strategy", "native", "--steps", "3", "--hidden", "64"]
    cmd, env = launch("full-path", other_python, 3, [*args, "--out", str(out)])
    job = run_command(cmd, timeout=180, env={**env, **RING_NBC}, cwd=tmp_path)
    assert job.returncode == 0, job.text[-3000:]
    found = commands_in(out, job.text)
    assert all("OMPI_MCA_coll_libnbc_iallreduce_algorithm=1" in shlex.split(c) for c in found), found
    # The setting matters here: the same run without it adds in another order.
    cmd, env = launch("full-path", other_python, 3, [*args, "--out", str(default)])
    assert run_command(cmd, timeout=180, env=env, cwd=tmp_path).returncode == 0
    assert rows(default)["steps.csv"] != rows(out)["steps.csv"]
    paste_each(found, tmp_path)


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
    paste_each(found, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("way", WAYS)
def test_the_main_jobs_commands_paste(tmp_path, other_python, way):
    out = tmp_path / "main"
    cmd, env = launch(way, other_python, 3, ["--steps", "4", "--out", str(out)])
    # The job's own sweep runs a case or two in its short budget (sweep-cases/, sweep.csv).
    env.update(MPIBENCH_SCENARIOS="none,kill-before-compute", MPIBENCH_STRATEGIES="ring", MPIBENCH_JOB_SWEEP_S="5")
    job = run_command(cmd, timeout=400, env=env, cwd=tmp_path)
    assert job.returncode in (0, 1), job.text[-3000:]  # 1: a sweep case found something
    found = commands_in(out, job.text)
    assert {"case.json", "sweep.csv"} <= sources(found), found  # each case's replay, and the sweep's
    for command in found:  # a schedule named from the run's folder would paste from there only
        words = shlex.split(command)
        assert "--scenario" not in words or not words[words.index("--scenario") + 1].endswith(".toml") \
            or os.path.isabs(words[words.index("--scenario") + 1]), command
    # Two replays pasted (each is a launch): one of a scenario of the job, one of a sweep case.
    case = next(c for c, where in sorted(found.items()) if "case.json" in where and "sweep-cases" not in c)
    sweep = next(c for c, where in sorted(found.items()) if "sweep.csv" in where)
    paste_each({case: found[case], sweep: found[sweep]}, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("way", WAYS)
def test_selftest_replays_paste(tmp_path, other_python, way):
    out = tmp_path / "selftest"
    _, env = launch(way, other_python, 1, [])
    if way == "path":  # its launcher found beside the Python on the PATH
        cmd = ["python", "-m", "mpibench", "selftest", "--strategy", "ring"]
    else:
        cmd = [other_python, "-m", "mpibench", "selftest", "--strategy", "ring", "--mpiexec",
               shlex.join([str(VENV_BIN / "mpirun"), *FLAGS])]
    job = run_command([*cmd, "--out", str(out)], timeout=600, env=env, cwd=tmp_path)
    assert job.returncode == 0, job.text[-3000:]
    found = commands_in(out, job.text)
    assert {"verdict.json", "case.json"} <= sources(found), found
    paste_each(found, tmp_path)


def ledger_commands() -> list[str]:
    """The replay commands of the lab's ledger of known defects (lab/FINDINGS.toml), as pasted."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
    import ledger

    return [ledger.pasteable(f.replay) for f in ledger.read() if f.replay]


def test_the_ledgers_known_defect_commands_name_what_they_run_by_absolute_paths():
    # Hand-written as typed in the source tree; shown so that they paste from any folder with a
    # bare PATH: every program and every file of the tree they name is found from there.
    commands = ledger_commands()
    assert len(commands) >= 20, commands
    for command in commands:
        words, here = shlex.split(command.split(" # ")[0].replace("; echo $?", "")), None
        if words[:1] == ["cd"]:
            here = Path(words[1])
            assert here.is_dir() and words[2] == "&&", command
            words = words[3:]
        while "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # the environment it names
        assert os.path.isabs(words[0]) and os.access(words[0], os.X_OK), command
        for word in words[1:]:
            if word.endswith(".py") and not os.path.isabs(word):  # a file of the tree, found from the cd
                assert here is not None and (here / word.split("::")[0]).exists(), command


@pytest.mark.slow
def test_the_ledgers_known_defect_mpibench_commands_parse_as_pasted(tmp_path):
    # Each is run as pasted with MPIBENCH_PARSE_ONLY=1: its arguments parse exactly as a run
    # would parse them, and nothing runs (most take minutes: a sweep, the self-test).
    for i, command in enumerate(c for c in ledger_commands() if "-m mpibench" in c):
        python_part = command[command.index(sys.executable if sys.executable in command else "python"):]
        cwd = tmp_path / f"paste-{i}"
        cwd.mkdir()
        env = {**paste_env(), "MPIBENCH_PARSE_ONLY": "1"}
        for word in shlex.split(command):
            if "=" in word and word.split("=")[0].isupper():
                env[word.split("=")[0]] = word.split("=", 1)[1]
            else:
                break
        done = subprocess.run(python_part, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "the arguments of" in done.stderr, f"{command}\n{done.stderr[-2000:]}"
