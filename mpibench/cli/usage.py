"""Exit statuses, the one-line usage error, and how a command body ends a job.

Bad input exits 2 with one line from the first rank and no traceback; a crash
on any rank aborts the whole job with the traceback of the rank that crashed.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback

import click

from mpibench.base.config import UsageError
from mpibench.base.exits import EXIT_COULD_NOT_RUN, EXIT_USAGE, EXIT_VIOLATION


def launched_rank() -> int:
    """This process's rank as the launcher tells it, without initialising MPI."""
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def launched_size() -> int:
    """How many ranks an MPI launcher started, without initialising MPI (1 when run bare).

    A Slurm allocation's task count counts only for a process that srun started as an
    MPI rank: a driver command run in the batch script itself is not one of them."""
    env = os.environ
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        if env.get(name, "").isdigit():
            return int(env[name])
    if ("PMIX_RANK" in env or "PMI_RANK" in env) and env.get("SLURM_NTASKS", "").isdigit():
        return int(env["SLURM_NTASKS"])
    return 1


def say(message: str, err: bool = False) -> None:
    """Print on the first rank only, so a job prints each line once."""
    if launched_rank() == 0:
        click.echo(message, err=err)


# Every rank parses the same arguments and fails alike, but only the first
# prints. When another rank exits first, the launcher may kill the first rank
# before it has written its line (seen here in about 1 launch in 30), and the
# user gets exit 2 with no word why. So on a usage error the ranks meet after
# the first has printed; the meeting is bounded so that a rank that never
# arrives cannot turn bad input into a hang.
USAGE_MEETING_DEADLINE_S = 15.0
ABORT_GRACE_S = 2.0  # an abort that has not ended this process by then: it leaves by itself


def meet_after_the_error_line(deadline_s: float = USAGE_MEETING_DEADLINE_S) -> None:
    """A barrier across the launched ranks that gives up after ``deadline_s``."""
    if launched_size() < 2:
        return
    from mpi4py import MPI

    request = MPI.COMM_WORLD.Ibarrier()
    give_up_at = time.monotonic() + deadline_s
    while not request.Test() and time.monotonic() < give_up_at:
        time.sleep(0.005)


def fail_usage(message: str):
    say(f"mpibench: error: {message}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    meet_after_the_error_line()
    sys.exit(EXIT_USAGE)


def could_not_run(message: str):
    """Exit 3: the command could not run at all (never a pass or a fail)."""
    click.echo(f"mpibench: could not run: {message}", err=True)
    sys.exit(EXIT_COULD_NOT_RUN)


def abort_job(exc: BaseException) -> None:
    """An unhandled exception on any rank ends the whole job with a message: its traceback,
    then (once the run's folder is open) the crash recorded and judged there, which ends
    every other rank too (:mod:`mpibench.job.crash_ending`), then the abort."""
    from mpi4py import MPI

    from mpibench.base.runinfo import this_host
    from mpibench.job.crash_ending import end_after_crash

    rank, host = MPI.COMM_WORLD.Get_rank(), this_host()
    prefix = f"[{rank}@{host}]"
    sys.stderr.write(f"{prefix} unhandled error, aborting the job:\n")
    sys.stderr.write("".join(f"{prefix} {line}\n" for line in
                             "".join(traceback.format_exception(exc)).splitlines()))
    sys.stderr.flush()
    status = end_after_crash(exc, rank, host, say=lambda line: print(line, flush=True),
                             world_size=MPI.COMM_WORLD.Get_size())
    code = EXIT_VIOLATION if status is None else status
    # Open MPI under --with-ft ulfm ends only this rank on an abort; leave even if it returns or waits.
    threading.Timer(ABORT_GRACE_S, os._exit, (code,)).start()
    MPI.COMM_WORLD.Abort(code)
    os._exit(code)


def end_late(exc: BaseException, rank: int) -> None:
    """A peer gave no answer and nothing recovers: once the run's folder is open the run is
    judged as the simulated engine judges it (its history stops short: "cannot judge", 3),
    with one line per late rank saying what it waited for, and the job ends. Returns only
    when no folder is open yet."""
    from mpi4py import MPI

    from mpibench.base.runinfo import this_host
    from mpibench.job.crash_ending import end_after_crash

    status = end_after_crash(exc, rank, this_host(), say=lambda line: print(line, flush=True),
                             world_size=MPI.COMM_WORLD.Get_size())
    if status is None:
        return
    threading.Timer(ABORT_GRACE_S, os._exit, (status,)).start()
    MPI.COMM_WORLD.Abort(status)
    os._exit(status)


def abort_could_not_run(message: str, report: bool) -> None:
    """End a whole MPI job as "could not run" (exit 3), one line from one process."""
    from mpi4py import MPI

    if report:
        sys.stderr.write(f"mpibench: could not run: {message}\n")
        sys.stderr.flush()
    time.sleep(0.5)  # let the reporting process write before an abort from another kills it
    MPI.COMM_WORLD.Abort(EXIT_COULD_NOT_RUN)


def guarded(body) -> int:
    """Run a job body: bad input exits 2 on every rank, a spawn the launcher refused
    ends the job as "could not run" (3), a crash aborts the job."""
    from mpibench.faults.respawn import SpawnRefused  # here: MPI starts only in a job body
    from mpibench.sync.comm import CommError

    from .ending import bound_exit, stuck_exit

    try:
        code = body()
    except UsageError as exc:
        fail_usage(str(exc))
    except SystemExit:
        raise
    except SpawnRefused as exc:  # the launcher's limits, not a defect: "could not run"
        abort_could_not_run(str(exc), exc.first)
        return EXIT_COULD_NOT_RUN
    except CommError as exc:  # a deadline no recovery policy absorbs: the run cannot go on
        from mpi4py import MPI

        end_late(exc, MPI.COMM_WORLD.Get_rank())
        stuck_exit(exc, MPI.COMM_WORLD.Get_rank())  # no run folder yet: nothing to judge
        return EXIT_VIOLATION
    except BaseException as exc:  # noqa: BLE001 - any crash must end all ranks
        abort_job(exc)
        return EXIT_VIOLATION
    from mpibench.base.folder_watch import announce_status
    from mpibench.faults.ulfm import exit_process

    announce_status(code)  # the other ranks leave with it within a few seconds, whatever holds them
    bound_exit(code)  # the status is known: leaving may not wait for ever
    exit_process(code)  # after a failure or a revoke, leave without MPI_Finalize (it can hang)
    return code
