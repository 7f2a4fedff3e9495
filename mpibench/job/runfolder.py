"""What a run writes into its output folder, shared by single runs, the main job and batch cases.

The folder is resolved once for the whole job (rank 0 creates it), run.json
records the configuration and the hosts, the record files are opened by the
first rank (the others may append later), and at the end the first live member
judges the folder's history and writes verdict.json and invariants.csv.
"""
from __future__ import annotations

from mpi4py import MPI

from mpibench.base import runinfo
from mpibench.base.folder_watch import verdict_written_here
from mpibench.base.launch_command import as_record, this_launch
from mpibench.base.config import RunConfig, UsageError
from mpibench.base.records import RunRecords


def backend_for(config: RunConfig):
    """The array back-end the config asks for; a device that is not there is bad usage."""
    from mpibench.kernels import select_backend

    try:
        return select_backend(config.device)
    except (RuntimeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def all_hosts(world: MPI.Comm) -> list[str]:
    return world.allgather(runinfo.this_host())


def write_run_json(out: str, config: RunConfig, world: MPI.Comm, backend, extra=None, job=None,
                    hosts=None) -> None:
    hosts = hosts if hosts is not None else all_hosts(world)
    if world.Get_rank() == 0:
        info = runinfo.describe({**config.as_dict(), **(job or {})}, hosts, {
            "backend": backend.name, "device": runinfo.device_section(backend),
            "replay_launch": as_record(this_launch()), **(extra or {})})
        runinfo.write(out, info)


def open_out(world: MPI.Comm, out) -> tuple[str, list[str]]:
    """The run's folder (an ``OutRequest``, or a path given as is), the same on every rank, and
    every rank's host (gathered in the same collective)."""
    from .outdir import OutRequest, resolve_on

    if isinstance(out, str):
        out = OutRequest(out, False, "run", 0)
    return resolve_on(world, out, UsageError, runinfo.this_host())


def open_records(world: MPI.Comm, out: str) -> RunRecords:
    """The job's first rank creates the record files; every other rank may append later."""
    return RunRecords(out) if world.Get_rank() == 0 else RunRecords.joining(out)


def verdict_status(out: str | None, checked=(), after_verdict=(), say: bool = True) -> int:
    """Write verdict.json and invariants.csv for the run in ``out``; 0 pass, 1 fail, 3 unknown,
    4 partial (some planned phases could not run here).

    ``checked``: case verdicts the online checks already reached on complete histories
    (the checker is deterministic: judging them again would give the same).
    ``after_verdict``: planned phases that come after this verdict (the main job's page).
    ``say``: print the verdict line (a sweep case's is summed up by its sweep instead).
    """
    from mpibench.check import check_run, exit_status, verdict_line, write_outputs

    if out is None:
        return 3
    verdict = check_run(out, {c.case: c for c in checked}, after_verdict)
    write_outputs(out, verdict)
    verdict_written_here(out)  # the job's own verdict: this process announces its status
    if say:
        print(verdict_line(verdict), flush=True)
    return exit_status(verdict)
