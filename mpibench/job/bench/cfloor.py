"""Build and call the C loop of ``MPI_Allreduce`` (``c_floor.c``): the no-Python floor.

The source is compiled once with the MPI library's own ``mpicc`` into a shared
library in a cache folder (``$MPIBENCH_CACHE``, else ``$XDG_CACHE_HOME/mpibench``,
else ``~/.cache/mpibench``), named by a hash of the source and of the
compiler's command line, so a new source or another MPI gets its own build.
The library is loaded with ctypes into the running ranks and links against
the ``libmpi`` mpi4py already loaded, so it runs on the same communicator.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).with_name("c_floor.c")
ANCHOR_SOURCE = Path(__file__).with_name("c_anchor.c")  # the stand-alone program (anchor.py)


def find_mpicc() -> str | None:
    """The MPI's compiler wrapper: ``$MPIBENCH_MPICC``, else next to this Python (the PyPI
    Open MPI), else on PATH."""
    chosen = os.environ.get("MPIBENCH_MPICC")
    if chosen:
        return chosen
    beside = Path(sys.executable).parent / "mpicc"
    if beside.exists():
        return str(beside)
    return shutil.which("mpicc")


def cache_dir() -> Path:
    root = os.environ.get("MPIBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mpibench")
    return Path(root)


def _wrapper_line(mpicc: str) -> str:
    try:
        done = subprocess.run([mpicc, "-showme"], capture_output=True, text=True, timeout=30)
        return done.stdout.strip() or done.stderr.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def library_path(mpicc: str, source: Path = SOURCE) -> Path:
    digest = hashlib.sha256(source.read_bytes() + _wrapper_line(mpicc).encode()).hexdigest()[:16]
    return cache_dir() / (f"{source.stem}-{digest}.so" if source == SOURCE else f"{source.stem}-{digest}")


def build(mpicc: str, source: Path = SOURCE) -> Path:
    """The compiled library (or, for ``ANCHOR_SOURCE``, the program), built now unless the
    cache already holds it.

    Built under a temporary name and renamed into place, so ranks building at
    once never load a half-written file. Raises ``RuntimeError`` with the
    compiler's message when the build fails."""
    target = library_path(mpicc, source)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=target.suffix, dir=target.parent)
    os.close(fd)
    shape = ["-shared", "-fPIC"] if source == SOURCE else []
    cmd = [mpicc, "-O2", *shape, "-o", tmp, str(source)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {(done.stderr or done.stdout).strip()[:300]}")
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"cannot build the C baseline with {mpicc}: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


class CFloor:
    """The loaded C loop: ``run(comm, inputs, buf, in_place, calls)`` -> seconds per call."""

    def __init__(self, path: Path):
        from mpi4py import MPI

        self.path = path
        self._lib = ctypes.CDLL(str(path))
        handle = ctypes.c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p) else ctypes.c_int
        fn = self._lib.mpibench_c_floor
        fn.argtypes = [handle, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
        fn.restype = ctypes.c_int
        self._fn = fn

    def run(self, comm, inputs: np.ndarray, buf: np.ndarray, in_place: bool, calls: int) -> np.ndarray:
        from mpi4py import MPI

        times = np.zeros(calls, dtype=np.float64)
        rc = self._fn(MPI._handleof(comm), inputs.ctypes.data, buf.ctypes.data, len(buf),
                      int(buf.dtype == np.float64), int(in_place), calls,
                      times.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
        if rc != 0:
            raise RuntimeError(f"MPI_Allreduce in the C loop returned error {rc}")
        return times


def load(world) -> tuple[CFloor | None, str]:
    """Build (rank 0 first, then the others find it) and load the C loop on every rank.

    Returns ``(CFloor, where)`` or ``(None, why not)``; every rank gets the same answer."""
    mpicc = find_mpicc()
    if mpicc is None:
        return None, "no mpicc found beside this Python or on PATH"
    why = ""
    if world.Get_rank() == 0:
        try:
            build(mpicc)
        except RuntimeError as exc:
            why = str(exc)
    why = world.bcast(why, root=0)
    if why:
        return None, why
    try:
        floor = CFloor(build(mpicc))  # other hosts without a shared cache build their own
    except (RuntimeError, OSError) as exc:
        floor, why = None, str(exc)
    failed = world.allreduce(floor is None)
    if failed:
        return None, why or "the C loop could not be loaded on every rank"
    return floor, str(floor.path)
