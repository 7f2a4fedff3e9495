"""Where a run writes: one folder per run, never mixed with another run's files.

Without ``--out`` every run gets a fresh folder
``mpibench-out/<UTC timestamp>-<kind>-seed<S>/`` (kind: the scenario name, ``main``,
``bench``, ``sweep`` or ``selftest``) and ``mpibench-out/latest`` is pointed at it. An explicit
``--out`` that already holds results is refused unless ``--force``; with
``--force`` the previous run's result files are removed first, so the folder
still holds one run. Only the first rank of a job resolves the folder (it
alone writes); the others learn the path from it.

Nothing here opens a result file: the caller validates its input first, then
resolves the folder, then writes.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone

DEFAULT_PARENT = "mpibench-out"
LATEST = "latest"
# What a run, a benchmark or a sweep writes; a folder holding any of these holds results.
RESULT_FILES = ("run.json", "steps.csv", "invariants.csv", "faults.csv", "bench.csv", "scaling.csv",
                "comparison.csv", "report.html", "sweep.csv", "sweep.json", "findings.csv", "verdict.json",
                "selftest.txt", "exit-status.json", "fingerprint.csv", "launches.csv")
RESULT_FOLDERS = ("history", "cases", "sweep", "crashes")


class OutDirError(ValueError):
    """The output folder cannot be used (one line for the user, exit status 2)."""


@dataclass(frozen=True)
class OutRequest:
    """What the command line asked for: a folder (or none) and whether to replace results."""

    path: str | None  # None: a fresh folder under DEFAULT_PARENT
    force: bool
    kind: str  # scenario name, "main", "bench" or "sweep": part of a fresh folder's name
    seed: int
    parent: str = DEFAULT_PARENT

    def check(self) -> None:
        """Refuse, without touching anything, what resolve() would refuse."""
        if self.path is None:
            _check_creatable(self.parent)
            return
        _check_creatable(self.path)
        held = results_in(self.path)
        if held and not self.force:
            raise OutDirError(f"--out {self.path} already holds results ({', '.join(held[:3])}"
                              f"{', ...' if len(held) > 3 else ''}); choose another folder, leave out --out "
                              f"for a fresh one, or add --force to replace them")


def results_in(path: str) -> list[str]:
    """The result files and folders ``path`` holds (empty when none, or when it does not exist)."""
    if not os.path.isdir(path):
        return []
    names = set(os.listdir(path))
    return [n for n in (*RESULT_FILES, *RESULT_FOLDERS, LATEST) if n in names]


def _check_creatable(path: str) -> None:
    """The folder exists and is writable, or it can be created (its nearest existing parent is)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise OutDirError(f"--out {path} is a file, not a folder")
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        raise OutDirError(f"cannot create --out {path}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutDirError(f"cannot create or write --out {path}: {probe} is not writable")


def safe_kind(kind: str) -> str:
    """A scenario name or TOML file as a short folder-name part."""
    base = os.path.splitext(os.path.basename(kind))[0] or "run"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", base)[:40]


def fresh_name(kind: str, seed: int, now: datetime | None = None) -> str:
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{safe_kind(kind)}-seed{seed}"


def resolve(request: OutRequest) -> str:
    """Create (or clear, with --force) the run's folder and return its path.

    Raises OutDirError for a folder that holds results without --force, or one
    that cannot be created; nothing is changed then.
    """
    request.check()
    try:
        if request.path is None:
            return _fresh(request)
        if request.force:
            _clear_results(request.path)
        os.makedirs(request.path, exist_ok=True)
    except OSError as exc:
        raise OutDirError(f"cannot create --out {request.path or request.parent}: {exc.strerror}") from None
    return request.path


def _fresh(request: OutRequest) -> str:
    os.makedirs(request.parent, exist_ok=True)
    name = fresh_name(request.kind, request.seed)
    for attempt in range(1, 1000):
        path = os.path.join(request.parent, name if attempt == 1 else f"{name}-{attempt}")
        try:
            os.mkdir(path)  # atomic: two runs started in the same second get different folders
        except FileExistsError:
            continue
        point_latest(request.parent, os.path.basename(path))
        return path
    raise OutDirError(f"no free folder name for {name} under {request.parent}")


def point_latest(parent: str, name: str) -> None:
    """``parent/latest`` -> ``name``, replaced atomically (a relative link, so the tree can move)."""
    link = os.path.join(parent, LATEST)
    if os.path.exists(link) and not os.path.islink(link):
        return  # something else is called "latest": leave it alone
    tmp = os.path.join(parent, f".{LATEST}.{os.getpid()}")
    try:
        os.symlink(name, tmp)
        os.replace(tmp, link)
    except OSError:  # a file system without links: the folder itself is what matters
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _clear_results(path: str) -> None:
    """Remove the previous run's result files (only those: --force replaces results, nothing else)."""
    for name in results_in(path):
        target = os.path.join(path, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        else:
            os.unlink(target)


def resolve_on(comm, request: OutRequest, error=OutDirError, payload=None) -> tuple[str, list]:
    """resolve() on the first rank of ``comm``; every rank gets its path (or raises ``error``).

    One allgather carries the answer, and each rank's ``payload`` with it (the
    job's host names): a bcast followed by the job's first allgather was seen
    to leave a non-root rank waiting in the bcast under ``--with-ft ulfm``.
    Returns the path and every rank's payload.
    """
    path = message = None
    if comm.Get_rank() == 0:
        try:
            path = resolve(request)
        except OutDirError as exc:
            message = str(exc)
    gathered = comm.allgather((path, message, payload))
    path, message, _ = gathered[0]
    if message is not None:
        raise error(message)
    return path, [g[2] for g in gathered]
