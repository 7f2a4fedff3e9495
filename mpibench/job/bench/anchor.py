"""An independent anchor in the benchmark's rounds: IMB-MPI1 or osu_allreduce, as its own job.

``bench --anchor PATH`` names a binary the user built against the same MPI
(the project ships and builds neither). In every round, at every size, rank 0
launches it as a separate job of the same size through the suite's launcher
(``base/config.launcher_argv``: ``MPIBENCH_MPIEXEC``, else this Python's ``mpirun``) with the round's call count, while
every benchmark rank sleeps (an ``Ibarrier`` polled with sleeps, so the cores
are the anchor's); the tool's own table gives the row. The kind is told by the
file name: ``IMB`` in it means IMB-MPI1 (``Allreduce``, lengths from a file,
``-iter`` with ``-iter_policy off``, ``-msglog`` raised to the size), anything else takes osu_allreduce's
options (``-m N:N -i ITER -x WARMUP -f``), as does the project's own
``c_anchor.c``. Its figures are each rank's mean call time, then min / avg /
max over the ranks, in microseconds. It inherits the ranks' environment,
malloc's page policy included (:mod:`.pages`). Its results are checked by the tool, not
here (the row's ``errors`` is empty and its note says so).
"""
from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mpi4py import MPI

from mpibench.base.config import launcher_argv
from mpibench.base.launchflags import LAUNCHER_NEVER_STARTED
from mpibench.base.mpi_settings import injected
from mpibench.job.hostload import cpus_of_first_host
from mpibench.job.timing import idle_until_released

from .rounds import RoundTimes

ANCHOR = "anchor"
LAUNCH_TIMEOUT_S = 600.0
RETRY_PAUSES_S = (2.0, 6.0)  # before the second try (any failure), the third (never started)
NOT_CHECKED = "independent tool, its own job: results checked by the tool, not by mpibench"
# What a launcher puts in its ranks' environment; a nested launch must not inherit it.
_LAUNCHER_PREFIXES = ("PMIX_", "PRTE_", "OPAL_", "PMI_", "HYDRA_", "HYDI_", "OMPI_")
_KEPT = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")


class AnchorFailed(RuntimeError):
    """The anchor did not run or printed no figure for a size."""


def kind_of(path: str) -> str:
    return "imb" if "imb" in Path(path).name.lower() else "osu"


def launch_env() -> dict:
    """This rank's environment without what its launcher injected; the user's MCA settings stay."""
    env = {}
    for key, value in os.environ.items():
        if key.startswith("OMPI_MCA_"):
            if not injected(key):
                env[key] = value
        elif key in _KEPT or not key.startswith(_LAUNCHER_PREFIXES):
            env[key] = value
    return env


def tool_args(path: str, n_bytes: int, ranks: int, calls: int, warmup: int, lengths_file: str) -> list[str]:
    if kind_of(path) == "imb":
        Path(lengths_file).write_text(f"{n_bytes}\n")
        # IMB truncates any length above 2**max_msg_log (default 2**22) to that size
        # and says so only in its table; -msglog raises the cap above this size.
        return [path, "Allreduce", "-npmin", str(ranks), "-iter", str(calls), "-iter_policy", "off",
                "-time", "1000", "-msglog", f"0:{max(1, n_bytes.bit_length())}", "-msglen", lengths_file]
    return [path, "-m", f"{n_bytes}:{n_bytes}", "-i", str(calls), "-x", str(max(warmup, 1)), "-f"]


def parse_table(kind: str, text: str) -> dict[int, RoundTimes]:
    """bytes -> seconds per call (min, avg, max over ranks) from the tool's printed table.

    IMB: ``#bytes #repetitions t_min t_max t_avg``; OSU (``-f``): ``Size Avg Min Max
    Iterations``, or ``Size Avg`` without ``-f``."""
    rows = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or line.lstrip().startswith("#") or not fields[0].isdigit():
            continue
        try:
            numbers = [float(f) for f in fields]
        except ValueError:
            continue
        if kind == "imb" and len(numbers) >= 5:
            rows[int(numbers[0])] = RoundTimes(numbers[2] * 1e-6, numbers[4] * 1e-6, numbers[3] * 1e-6)
        elif kind == "osu" and len(numbers) >= 4:
            rows[int(numbers[0])] = RoundTimes(numbers[2] * 1e-6, numbers[1] * 1e-6, numbers[3] * 1e-6)
        elif kind == "osu" and len(numbers) >= 2:
            rows[int(numbers[0])] = RoundTimes(numbers[1] * 1e-6, numbers[1] * 1e-6, numbers[1] * 1e-6)
    return rows


def run_once(path: str, n_bytes: int, ranks: int, calls: int, warmup: int,
             cores: set[int] | None = None) -> RoundTimes:
    """Launch the tool for one size (on the calling process) and read its figure. A launch
    that gives none is tried once more, two seconds later; one whose launcher never started
    (Open MPI's "The PMIx server's listener thread failed to start") a third time, six
    seconds after that, before the anchor counts as failed: those failures come in runs of
    two here, once in some hundred launches."""
    try:
        return _launch(path, n_bytes, ranks, calls, warmup, cores)
    except AnchorFailed:
        time.sleep(RETRY_PAUSES_S[0])
    try:
        return _launch(path, n_bytes, ranks, calls, warmup, cores)
    except AnchorFailed as exc:
        if LAUNCHER_NEVER_STARTED not in str(exc):
            raise
        time.sleep(RETRY_PAUSES_S[1])
    return _launch(path, n_bytes, ranks, calls, warmup, cores)


def _launch(path: str, n_bytes: int, ranks: int, calls: int, warmup: int, cores: set[int] | None) -> RoundTimes:
    with tempfile.TemporaryDirectory(prefix="mpibench-anchor-") as tmp:
        cmd = launcher_argv() + ["-n", str(ranks)] + tool_args(
            path, n_bytes, ranks, calls, warmup, os.path.join(tmp, "lengths"))
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL, cwd=tmp,
                                  env=launch_env(),
                                  preexec_fn=None if cores is None else lambda: os.sched_setaffinity(0, cores))
        except (OSError, subprocess.SubprocessError) as exc:
            raise AnchorFailed(f"{shlex.join(cmd)}: {exc}") from None
    got = parse_table(kind_of(path), done.stdout).get(n_bytes)
    if done.returncode != 0 or got is None:
        gist = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:300]
        raise AnchorFailed(f"{shlex.join(cmd)} exited {done.returncode} without a figure for "
                           f"{n_bytes} B: {gist}")
    return got


@dataclass
class AnchorRun:
    """The anchor as a benchmark candidate: one launch per round and size, timed by the tool."""

    path: str
    n_bytes: int
    warmup: int
    name: str = ANCHOR
    in_place: bool = False

    def round_times(self, mpi: MPI.Comm, calls: int) -> tuple[RoundTimes, None]:
        """Collective: rank 0 launches the tool while every rank sleeps; all get its figures."""
        answer: RoundTimes | str = ""
        cores = cpus_of_first_host(mpi)  # a nested launch inherits rank 0's mask: one core when bound
        if mpi.Get_rank() == 0:
            try:
                answer = run_once(self.path, self.n_bytes, mpi.Get_size(), calls, self.warmup, cores)
            except AnchorFailed as exc:
                answer = str(exc)
        idle_until_released(mpi)
        answer = mpi.bcast(answer, root=0)
        if isinstance(answer, str):
            raise AnchorFailed(answer)
        return answer, None

    def close(self) -> None:
        pass


def label(path: str) -> str:
    tool = "IMB-MPI1 Allreduce" if kind_of(path) == "imb" else "osu_allreduce-style tool"
    return f"anchor: {tool} at {path}, its own job"

