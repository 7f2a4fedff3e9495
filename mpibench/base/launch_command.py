"""Every command mpibench prints or writes, formed in one place from the launch actually used.

A printed command must run as pasted, from any folder, with a bare PATH: so it names
the launcher by its absolute path *with the flags the run was started with* (a replay
of a 6-rank run on 2 cores needs the ``--oversubscribe`` it was launched with), this
Python by its absolute path, the environment that changes computed values
(:mod:`.numeric_env`) and the run's own arguments.

Which launch was used:

- inside a rank, the launcher process above it (``/proc``: ``mpirun``/``prterun``,
  ``mpiexec``/``mpiexec.hydra``, ``srun``), its arguments up to the program, less the
  rank count; a rank that sees none (a singleton, a launcher on another host) falls
  back as a driver does;
- in a driver (``sweep``, ``selftest``, the self-launch), the launcher it starts its
  jobs with: ``--mpiexec`` or ``MPIBENCH_MPIEXEC`` (a bare name made absolute), else
  the ``mpirun`` beside this Python with Open MPI's flags, else the PATH's;
- offline (``report DIR``), the launch the run recorded in ``run.json``
  (:func:`as_record`, :func:`from_record`).
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass

from .launchflags import OPEN_MPI_FLAGS, root_env_words
from .numeric_env import env_prefix

# Launchers a user types (a daemon or proxy under them carries no user flags).
USER_LAUNCHERS = {"mpirun": "mpirun", "prterun": "mpirun", "orterun": "mpirun", "mpiexec": "mpiexec",
                  "mpiexec.hydra": "mpiexec", "srun": "srun"}
RANK_COUNT_OPTIONS = ("-n", "-np", "--np", "--n", "-c", "--ntasks")
ANCESTORS_READ = 10
OPEN_MPI_TOOLS = ("ompi_info", "prterun", "orterun")

@dataclass(frozen=True)
class Launch:
    """How jobs are started: the launcher (absolute program and its flags, no rank count)
    and the Python that runs ``-m mpibench``."""

    launcher: tuple[str, ...]
    python: str


def command(launch: Launch, ranks: int, args: list[str]) -> list[str]:
    """``[env NAME=VALUE ...] LAUNCHER FLAGS -n RANKS PYTHON -m mpibench ARGS``."""
    return [*env_prefix(), *launch.launcher, "-n", str(ranks), launch.python, "-m", "mpibench", *args]


def command_text(launch: Launch, ranks: int, args: list[str]) -> str:
    """:func:`command` as one line to paste: for root under Open MPI, led by the variables
    without which Open MPI refuses to start (a clean shell has none of them)."""
    return shlex.join([*root_env_for(launch.launcher), *command(launch, ranks, args)])


def root_env_for(launcher: tuple[str, ...]) -> list[str]:
    """``VAR=1`` words a pasted command needs before ``launcher``: Open MPI's permission to
    run as root when this process is root and the launcher is Open MPI's; none otherwise."""
    return root_env_words() if launcher and _is_open_mpi_program(launcher[0]) else []


def _is_open_mpi_program(program: str) -> bool:
    """Open MPI installs its own tools beside its launcher; no other MPI ships them, and
    looking costs no process start (a rank forms its replay command at every run)."""
    folders = {os.path.dirname(program), os.path.dirname(os.path.realpath(program))}
    return any(os.access(os.path.join(folder, tool), os.X_OK)
               for folder in folders for tool in OPEN_MPI_TOOLS)


def absolute_program(name: str) -> str:
    """``name`` as an absolute path: as given when it has a folder, else from the PATH, else
    beside this Python (a virtual environment's ``bin`` need not be on the PATH)."""
    if os.sep in name:
        return os.path.abspath(name)
    beside = os.path.join(os.path.dirname(sys.executable), name)
    found = shutil.which(name) or (beside if os.access(beside, os.X_OK) else None)
    return os.path.abspath(found) if found else name


def driver_launch(mpiexec: list[str] | None = None) -> Launch:
    """The launch a driver uses: ``mpiexec`` (an argument list), else ``MPIBENCH_MPIEXEC``,
    else this Python's ``mpirun`` with Open MPI's flags, else the PATH's ``mpirun``."""
    argv = list(mpiexec) if mpiexec else shlex.split(os.environ.get("MPIBENCH_MPIEXEC", "").strip())
    if not argv:
        beside = os.path.join(os.path.dirname(sys.executable), "mpirun")
        argv = [beside, *OPEN_MPI_FLAGS] if os.access(beside, os.X_OK) else ["mpirun"]
    return Launch((absolute_program(argv[0]), *argv[1:]), sys.executable)


def this_launch() -> Launch:
    """The launch that started this rank (see the module's text), else a driver's."""
    seen = launcher_above()
    return Launch(seen, sys.executable) if seen else driver_launch()


def launcher_above(pid: int | None = None) -> tuple[str, ...]:
    """The nearest user-facing launcher above process ``pid`` (default: this one), as it
    was typed up to the program it started, less the rank count; () when none is seen."""
    argv = nearest_ancestor_argv(USER_LAUNCHERS, pid, ANCESTORS_READ)
    return launcher_part(argv) if argv else ()


def nearest_ancestor_argv(names, pid: int | None = None, depth: int = ANCESTORS_READ) -> tuple[str, ...]:
    """The argv of the nearest of ``depth`` ancestors of process ``pid`` (default: this one)
    whose program's base name is in ``names``, read from /proc; () when none is."""
    pid = os.getpid() if pid is None else pid
    for _ in range(depth):
        pid = _parent_of(pid)
        if pid is None or pid <= 1:
            return ()
        argv = _argv_of(pid)
        if argv and os.path.basename(argv[0]) in names:
            return argv
    return ()


def launcher_part(argv) -> tuple[str, ...]:
    """A launcher's command line up to the program it starts (a Python), less the rank count;
    the program named as the user would type it (``mpirun`` for Open MPI's ``prterun``)."""
    words, i = list(argv), 1
    kept = []
    while i < len(words) and not _is_python(words[i]):
        word = words[i]
        if word in RANK_COUNT_OPTIONS:
            i += 2
            continue
        if any(word.startswith(f"{opt}=") for opt in RANK_COUNT_OPTIONS):
            i += 1
            continue
        kept.append(word)
        i += 1
    return (_as_typed(words[0]), *kept)


def _is_python(word: str) -> bool:
    name = os.path.basename(word)
    return name.startswith("python") or os.path.realpath(word) == os.path.realpath(sys.executable)


def _as_typed(program: str) -> str:
    path = absolute_program(program)
    typed = USER_LAUNCHERS.get(os.path.basename(path), os.path.basename(path))
    sibling = os.path.join(os.path.dirname(path), typed)
    return sibling if os.access(sibling, os.X_OK) else path


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _argv_of(pid: int) -> tuple[str, ...]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return ()
    return tuple(part.decode(errors="replace") for part in raw.split(b"\0") if part)


def as_record(launch: Launch) -> dict:
    """For run.json: what a replay of this run is launched with (every run argument it
    repeats is in the config, :meth:`mpibench.base.config.RunConfig.cli_args`)."""
    return {"launcher": list(launch.launcher), "python": launch.python}


def from_record(record) -> tuple[Launch, list[str]] | None:
    """run.json's record back as a launch and the extra arguments an older run.json recorded
    (None when it holds no launch)."""
    if not isinstance(record, dict) or not record.get("launcher") or not record.get("python"):
        return None
    return Launch(tuple(str(w) for w in record["launcher"]), str(record["python"])), \
        [str(w) for w in record.get("extra_args") or []]
