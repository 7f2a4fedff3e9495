"""Jobs on the simulated engine: ``run --engine sim`` as ``mpirun -n P python -m mpibench run`` would be.

Every simulated process runs the same job body the real command runs under
``mpirun`` (:func:`mpibench.job.suite.single_run`), and a replacement spawned
after a kill runs the same entry as ``python -m mpibench _replacement``. The
guard around each body does what the command line's does for a real process:
bad input is one line and exit 2, a refused spawn is exit 3, a crash prints
its traceback and aborts the whole job. The job's status is the one its
surviving processes return (they agree on it), as ``mpirun`` reports it.
"""
from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass

from mpibench.base.config import RunConfig, UsageError

from .network import Network
from .process import WorldResult, run_world
from .world import Options

TAG = "simulated"


@dataclass(frozen=True)
class SimSettings:
    """How the simulated cluster behaves: network figures, Open MPI behaviours, timing."""

    net: Network = Network()
    options: Options = Options()
    # charge each process the host's time it ran: False (bit-exact), "cpu" or "wall" (see scheduler)
    measure_compute: bool | str = False
    # under measure_compute: virtual seconds charged per host second (the host's speed then / now)
    cpu_scale: float = 1.0
    # ``auto``'s record for the job to start from, ((entry, candidate), ...): a simulated job
    # keeps its own (virtual-time choices never reach the machine's file real runs read)
    auto_choices: tuple = ()
    # the most host seconds one simulated job may take (None: unbounded); past it the job is
    # ended as hung, as a launcher's timeout ends a real one
    wall_limit_s: float | None = None


def _guard(body) -> int:
    from mpi4py import MPI

    from mpibench.faults.respawn import SpawnRefused

    try:
        return body()
    except UsageError as exc:
        if MPI.COMM_WORLD.Get_rank() == 0:
            print(f"mpibench: error: {exc}", file=sys.stderr, flush=True)
        return 2
    except SpawnRefused as exc:
        if exc.first:
            print(f"mpibench: could not run: {exc}", file=sys.stderr, flush=True)
        return 3
    except Exception as exc:  # noqa: BLE001 - a crash ends the whole job, as guarded() does
        from mpibench.sync.comm import CommError

        rank = MPI.COMM_WORLD.Get_rank()
        if not isinstance(exc, CommError):  # a late peer is said in one line per rank, as on MPI
            text = "".join(traceback.format_exception(exc))
            sys.stderr.write("".join(f"[{rank}@sim] {line}\n" for line in text.splitlines()))
        from mpibench.job.crash_ending import end_after_crash

        status = end_after_crash(exc, rank, "sim", say=lambda line: print(line, flush=True))
        MPI.COMM_WORLD.Abort(1 if status is None else status)
        return 1 if status is None else status


def _run_body(config: RunConfig, request):
    def body() -> int:
        from mpibench.job.suite import single_run

        return single_run(config, request)
    return body


def _replacement_body() -> int:
    from mpibench.faults.respawn import replacement_main
    from mpibench.job.suite import replacement_entry

    return _guard(lambda: replacement_main(replacement_entry))


def job_status(result: WorldResult) -> int:
    """What ``mpirun`` would exit with: the survivors' agreed status; 1 when none finished."""
    finished = [c for c in result.codes.values() if c is not None and c >= 0]
    if result.deadlocked:
        return 1 if not finished else max(max(finished), 1)
    return max(finished) if finished else 1


def simulate_run(config: RunConfig, request, ranks: int, settings: SimSettings = SimSettings(),
                 quiet: bool = False) -> tuple[int, WorldResult]:
    """One ``run`` on ``ranks`` simulated processes; (exit status, how each process ended)."""
    return simulate_job(_run_body(config, request), ranks, settings, quiet)


def simulate_job(body, ranks: int, settings: SimSettings = SimSettings(), quiet: bool = False):
    """``body()`` (a job body, as the command line runs it under mpirun) on ``ranks`` simulated
    processes, guarded as a real process is; (exit status, how each process ended)."""
    from mpibench.sync.auto_choices import kept_apart

    start = time.perf_counter()
    with kept_apart(dict(settings.auto_choices)) as record:
        result = run_world(ranks, lambda: _guard(body), _replacement_body, settings.net, settings.options,
                           settings.measure_compute, settings.cpu_scale, settings.wall_limit_s)
        result.auto_choices = dict(record)
    status = job_status(result)
    if result.over_wall_limit:
        print(f"engine sim: the job ran past its {settings.wall_limit_s:g} s wall bound; processes "
              f"{' '.join(map(str, result.deadlocked))} never ended (a simulator hang)", flush=True)
    elif result.deadlocked:
        print(f"engine sim: processes {' '.join(map(str, result.deadlocked))} waited forever "
              "(a simulated hang; the real job's launcher timeout would end it)", flush=True)
    if not quiet:
        print(f"engine sim [{TAG}]: {ranks} process(es) (+{result.spawned} spawned), virtual "
              f"{result.virtual_s:.6f} s, {result.switches} switches, wall {time.perf_counter() - start:.2f} s, "
              f"exit {status}", flush=True)
    return status, result
