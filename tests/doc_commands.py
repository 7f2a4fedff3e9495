"""The shell blocks of README.md and docs/, and how a test runs or checks each one.

Convention (docs/index.md, "Commands in this manual"):

* a block fenced ```sh is run as it stands, block after block in one scratch folder per
  page (links to the checkout's top-level entries, so relative paths resolve and nothing
  is written into the checkout); every block must finish in seconds;
* a block fenced ```sh long holds commands that take longer: only their arguments are
  checked. ``python -m mpibench ...`` (also after ``mpirun``/``srun``/``mpiexec`` and
  their flags, or after ``jobs/testbed.py ... --``) is parsed by the CLI itself under
  ``MPIBENCH_PARSE_ONLY=1``; ``make`` lines by ``make -n``; ``sbatch SCRIPT ARGS`` by
  ``bash -n SCRIPT`` and SCRIPT's arguments as the mpibench arguments the script hands
  on; a Python script's options must each appear in its ``--help``; the whole block by
  ``bash -n``;
* ```text (or any other tag) is output or a file, and is not run.
"""
from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
FENCE = re.compile(r"^(\s*)```(\S*)[ \t]*(.*)$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
LAUNCHERS = {"mpirun", "mpiexec", "srun", "prterun"}
WRAPPERS = {"sudo", "env", "time", "exec", "nice", "timeout"}
# what each Slurm script hands its arguments to (jobs/*.sbatch headers)
SBATCH_HANDS_ON = {"mpibench.sbatch": [], "scaling.sbatch": [], "sweep-array.sbatch": ["sweep"]}
RUN_BLOCK_TIMEOUT_S = 240  # generous: the blocks take seconds, but the machine may be loaded
PARSE_TIMEOUT_S = 120


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    long: bool
    text: str

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def shell_blocks(path: Path) -> list[Block]:
    """Every ```sh and ```sh long block of one Markdown file (fences may be indented)."""
    blocks, lines, i = [], path.read_text().splitlines(), 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, tag, rest = opening.groups()
        body, j = [], i + 1
        while j < len(lines) and lines[j].strip() != "```":
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        if tag == "sh":
            blocks.append(Block(path, i + 1, rest.strip() == "long", "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def scratch_checkout(folder: Path) -> Path:
    """A folder whose entries link to the checkout's, so writes land in the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in ROOT.iterdir():
        if entry.name not in {".git", "mpibench-out", "site"} and not (folder / entry.name).exists():
            (folder / entry.name).symlink_to(entry)
    return folder


def block_env() -> dict:
    env = dict(os.environ)
    bin_dir = str(Path(PYTHON).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    env.pop("MPIBENCH_PARSE_ONLY", None)
    return env


def run_block(block: Block, folder: Path) -> str | None:
    """Run a ```sh block in ``folder``; None when it succeeded, else what went wrong.

    The block runs in a process group of its own, killed whole if it outlives its time
    (a launcher's ranks must not survive the test)."""
    process = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=folder,
                               env=block_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=RUN_BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return f"{block.where()}: still running after {RUN_BLOCK_TIMEOUT_S} s"
    if process.returncode != 0:
        return (f"{block.where()}: exit {process.returncode}\n{block.text}"
                f"--- stdout (tail)\n{stdout[-1500:]}--- stderr (tail)\n{stderr[-1500:]}")
    return None


def logical_lines(text: str) -> list[str]:
    """The block's commands: continuation lines joined, blank lines dropped."""
    return [line for line in text.replace("\\\n", " ").splitlines() if line.strip()]


def simple_commands(line: str) -> list[list[str]]:
    """A line's simple commands (split at ; && || |), command substitutions their own."""
    inner = SUBSTITUTION.findall(line)
    lexer = shlex.shlex(SUBSTITUTION.sub("SUBSTITUTED", line), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split, lexer.commenters = True, "#"
    commands, current = [], []
    for token in lexer:
        if token and set(token) <= set(";&|"):
            commands.append(current)
            current = []
        else:
            current.append(token)
    commands.append(current)
    for text in inner:
        commands.extend(simple_commands(text))
    return [c for c in commands if c]


def unwrapped(words: list[str]) -> list[str]:
    """The command itself: environment assignments and sudo/env/nice/timeout taken off."""
    while words:
        head = os.path.basename(words[0])
        if ASSIGNMENT.match(words[0]):
            words = words[1:]
        elif head in WRAPPERS:
            words = words[1:]
            while words and (words[0].startswith("-") or ASSIGNMENT.match(words[0])
                             or (head in {"timeout", "nice"} and re.fullmatch(r"[\d.]+[smh]?", words[0]))):
                words = words[1:]
        else:
            return words
    return words


def check_mpibench(args: list[str], folder: Path) -> str | None:
    """Parse an mpibench command line with MPIBENCH_PARSE_ONLY=1, in this process (the
    same click group ``python -m mpibench`` runs; in-process, as a check takes milliseconds)."""
    from mpibench.cli import main

    stderr, before = io.StringIO(), os.getcwd()
    try:
        os.chdir(folder)
        os.environ["MPIBENCH_PARSE_ONLY"] = "1"
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            main.main(args, prog_name="python -m mpibench")
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.environ.pop("MPIBENCH_PARSE_ONLY", None)
        os.chdir(before)
    if status != 0:
        return f"mpibench {shlex.join(args)}: exit {status}: {stderr.getvalue().strip()[-600:]}"
    return None


@functools.lru_cache(maxsize=None)
def script_help(path: Path) -> tuple[int, str]:
    done = subprocess.run([PYTHON, str(path), "--help"], cwd=path.parent, env=block_env(), text=True,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=PARSE_TIMEOUT_S)
    return done.returncode, done.stdout + done.stderr


def check_script(script: str, args: list[str], folder: Path) -> str | None:
    """A Python script: it exists, its --help runs, and every option used is in it."""
    path = folder / script
    if not path.is_file():
        return f"{script}: no such file"
    own, handed_on = (args[:args.index("--")], args[args.index("--") + 1:]) if "--" in args else (args, None)
    status, text = script_help(path.resolve())
    if status != 0:
        return f"{script} --help: exit {status}: {text.strip()[-400:]}"
    for word in own:
        option = word.split("=")[0]
        if option.startswith("-") and not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text):
            return f"{script}: option {option} is not in its --help"
    return check_mpibench(handed_on, folder) if handed_on else None


def check_sbatch(words: list[str], folder: Path) -> str | None:
    scripts = [i for i, w in enumerate(words) if w.endswith((".sbatch", ".sh"))]
    if not scripts:
        return f"sbatch line without a job script: {shlex.join(words)}"
    script, args = words[scripts[0]], words[scripts[0] + 1:]
    problem = check_shell_script(script, folder)
    hands_on = SBATCH_HANDS_ON.get(os.path.basename(script))
    if problem is None and hands_on is not None:
        return check_mpibench(hands_on + args, folder)
    return problem


def check_shell_script(script: str, folder: Path) -> str | None:
    if not (folder / script).is_file():
        return f"{script}: no such file"
    done = subprocess.run(["bash", "-n", script], cwd=folder, capture_output=True, text=True)
    return f"bash -n {script}: {done.stderr.strip()}" if done.returncode else None


def check_make(args: list[str], folder: Path) -> str | None:
    done = subprocess.run(["make", "-n", *args], cwd=folder, env=block_env(), text=True,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=PARSE_TIMEOUT_S)
    return f"make -n {shlex.join(args)}: {done.stderr.strip()[-400:]}" if done.returncode else None


def check_command(words: list[str], folder: Path) -> str | None:
    """Check one simple command of a ```sh long block without running it."""
    words = unwrapped(words)
    if not words:
        return None
    head = os.path.basename(words[0])
    if head in LAUNCHERS:
        starts = [i for i, w in enumerate(words) if os.path.basename(w).startswith("python")
                  or os.path.basename(w) == "mpibench"]
        words = words[starts[0]:] if starts else []
        head = os.path.basename(words[0]) if words else ""
    if head.startswith("python") and words[1:3] == ["-m", "mpibench"]:
        return check_mpibench(words[3:], folder)
    if head.startswith("python") and len(words) > 1 and words[1].endswith(".py"):
        return check_script(words[1], words[2:], folder)
    if head == "mpibench":
        return check_mpibench(words[1:], folder)
    if words[0].endswith(".py"):
        return check_script(words[0], words[1:], folder)
    if head == "make":
        return check_make(words[1:], folder)
    if head == "sbatch":
        return check_sbatch(words[1:], folder)
    if words[0].endswith(".sh"):
        return check_shell_script(words[0], folder)
    return None


def check_long_block(block: Block, folder: Path) -> list[str]:
    """Every problem found in a ```sh long block (empty: its commands parse).

    Long blocks are read as in a checkout where `make run` has run: a folder that must
    exist, such as ``predict mpibench-out/latest``, does."""
    (folder / "mpibench-out" / "latest").mkdir(parents=True, exist_ok=True)
    syntax = subprocess.run(["bash", "-n", "-c", block.text], capture_output=True, text=True)
    if syntax.returncode:
        return [f"{block.where()}: bash -n: {syntax.stderr.strip()}"]
    problems = []
    for line in logical_lines(block.text):
        for words in simple_commands(line):
            problem = check_command(words, folder)
            if problem:
                problems.append(f"{block.where()}: {problem}\n    in: {line.strip()}")
    return problems
