"""Started without a launcher, the main job starts itself under one.

``python -m mpibench`` run by hand is a single process: as an MPI singleton it
could run only the one-rank scenarios. Instead it finds the launcher the drivers
use (``MPIBENCH_MPIEXEC``, else the ``mpirun`` beside this Python, with Open
MPI's flags for every case), checks that it starts ranks at all, says what it
starts, and runs the main job under it on ``--np`` ranks (default
:data:`DEFAULT_RANKS`: every named scenario fits, and the job stays short). The
job's own exit status is the command's; a launcher that cannot start the job is
"could not run" (exit 3). This process never initialises MPI.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys

from mpibench.base.exits import EXIT_COULD_NOT_RUN, EXIT_OK, EXIT_PARTIAL
from mpibench.base.launchflags import root_env_words

DEFAULT_RANKS = 4  # the largest world any named scenario needs is 3; 4 leaves a majority after a kill
STARTED_HERE = "MPIBENCH_SELF_LAUNCHED"  # set in the launched job: never launch twice
LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "PMI_FD")
STOP_GRACE_S = 10.0


def under_launcher() -> bool:
    """Whether an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx) started this process."""
    return any(name in os.environ for name in LAUNCHER_VARIABLES) or os.environ.get(STARTED_HERE) == "1"


def launch_main_job(ranks: int | None, args: list[str]) -> int:
    """Run ``python -m mpibench ARGS`` on ``ranks`` ranks under the launcher; its exit status."""
    from mpibench.drive.launch import LaunchError, is_open_mpi, job_env, mpibench_command, preflight

    ranks = ranks or DEFAULT_RANKS
    try:
        launcher = preflight(None, ranks)
    except LaunchError as exc:
        print(f"mpibench: could not run: no launcher started this process, and starting one failed: {exc}",
              file=sys.stderr, flush=True)
        return EXIT_COULD_NOT_RUN
    cmd = mpibench_command(launcher, ranks, args)
    pasted = [*root_env_words(), *cmd] if is_open_mpi(launcher[0]) else cmd
    print(f"mpibench: started without a launcher; running the main job on {ranks} ranks "
          f"(--np N or MPIBENCH_MPIEXEC to change):\n  {shlex.join(pasted)}", flush=True)
    env = job_env()
    env[STARTED_HERE] = "1"
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)
    try:
        code = proc.wait()
    except KeyboardInterrupt:  # the launcher got the same Ctrl-C; give it time to end its ranks
        _stop(proc)
        raise
    if EXIT_OK <= code <= EXIT_PARTIAL:
        return code
    print(f"mpibench: could not run: the launcher ended with status {code} before the job could report "
          f"a verdict ({shlex.join(cmd)})", file=sys.stderr, flush=True)
    return EXIT_COULD_NOT_RUN


def _stop(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
