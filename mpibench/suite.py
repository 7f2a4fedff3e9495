"""The jobs behind the command line: one run, and the main job over every scenario."""
from __future__ import annotations

import time

from mpi4py import MPI

from . import runinfo
from .config import RunConfig, UsageError
from .continuation import BetweenScenarios, MainJob, MainJobAt, SingleRun
from .records import RunRecords
from .runner import free_comm, prepare, recoverable_dup, resume_scenario, run_scenario_on
from .worker import Summary, violation_message

MAIN_STRATEGIES = ("ring", "ps")


def main_scenarios(world_size: int) -> list[str]:
    """Every named scenario that makes sense at this world size.

    ``MPIBENCH_SCENARIOS`` (comma-separated names) narrows the list: tests run
    many scenarios in one launch this way.
    """
    import os

    from mpibench.faults.scenarios import SCENARIOS

    wanted = [n for n in os.environ.get("MPIBENCH_SCENARIOS", "").split(",") if n]
    return [name for name, (_, smallest) in SCENARIOS.items()
            if world_size >= smallest and (not wanted or name in wanted)]


def _too_small_for(world_size: int) -> list[str]:
    """Named scenarios this world size is too small for, with the size they need."""
    from mpibench.faults.scenarios import SCENARIOS

    return [f"{name} (needs {smallest})" for name, (_, smallest) in SCENARIOS.items()
            if world_size < smallest]


def _benchmarks_wanted() -> bool:
    """``MPIBENCH_NO_BENCH=1`` leaves out calibration and benchmarks (tests of the scenarios)."""
    import os

    return os.environ.get("MPIBENCH_NO_BENCH") != "1"


def _backend(config: RunConfig):
    from mpibench.kernels import select_backend

    try:
        return select_backend(config.device)
    except (RuntimeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def _hosts(world: MPI.Comm) -> list[str]:
    return world.allgather(runinfo.this_host())


def _write_run_json(out: str, config: RunConfig, world: MPI.Comm, backend, extra=None) -> None:
    hosts = _hosts(world)
    if world.Get_rank() == 0:
        info = runinfo.describe(config.as_dict(), hosts, {
            "backend": backend.name, "device": runinfo.device_section(backend), **(extra or {})})
        runinfo.write(out, info)


def single_run(config: RunConfig, out: str) -> int:
    world = MPI.COMM_WORLD
    prepare(config, world.Get_size())  # bad input fails before anything is written
    backend = _backend(config)
    records = _records(world, out)
    _write_run_json(out, config, world, backend)
    start = time.perf_counter()
    summary, comm = run_scenario_on(config, recoverable_dup(world), records, backend,
                                    continuation=SingleRun(out))
    records.close()
    code = _finish([(config, summary)], world.Get_size(), time.perf_counter() - start, backend, comm)
    code = comm.bcast(code, root=0)
    free_comm(comm)
    return code


def main_job(base: RunConfig, out: str) -> int:
    from dataclasses import replace

    world = MPI.COMM_WORLD
    plan = [replace(base, scenario=s, strategy=k) for s in main_scenarios(world.Get_size())
            for k in MAIN_STRATEGIES]
    for config in plan:
        prepare(config, world.Get_size())
    left_out = _too_small_for(world.Get_size())
    if left_out:
        _progress(world, f"left out at {world.Get_size()} rank(s): " + ", ".join(left_out))
    backend = _backend(base)
    from mpibench.results import job as results_job

    calibration = None
    if _benchmarks_wanted():
        _progress(world, "calibrating (ping-pong, reduction, compute) ...")
        calibration = results_job.start(world, base)  # while the job is still quiet
    records = _records(world, out)
    _write_run_json(out, base, world, backend, {"plan": [f"{c.scenario}/{c.strategy}" for c in plan],
                                                "calibration": calibration.as_dict() if calibration else None})
    job = MainJob(tuple(plan), world.Get_size(), out, base, calibration, time.time())
    return _main_loop(job, recoverable_dup(world), 0, records, backend)


def _records(world: MPI.Comm, out: str) -> RunRecords:
    """The job's first rank creates the record files; every other rank may append later."""
    return RunRecords(out) if world.Get_rank() == 0 else RunRecords.joining(out)


def _main_loop(job: MainJob, comm: MPI.Comm, first: int, records, backend, done=()) -> int:
    """Scenarios ``first``.. of the main job, the world size restored before each, then
    the benchmarks. Replacements spawned on the way enter here too, with ``done``: the
    scenarios already run."""
    from mpibench.results import job as results_job

    plan, n = job.plan, job.world_size
    results = list(done)
    for index in range(first, len(plan)):
        comm = restore_world(comm, n, BetweenScenarios(job, index, tuple(results)))
        config = plan[index]
        _progress(comm, f"scenario {config.scenario} under {config.strategy} ...")
        summary, comm = run_scenario_on(config, comm, records, backend,
                                        continuation=MainJobAt(job, index, tuple(results)))
        results.append((config, summary))
    records.close()
    from mpibench.sync import STRATEGIES

    comm = restore_world(comm, n, BetweenScenarios(job, len(plan), tuple(results)))
    if job.calibration is not None:
        from .bench import main_job_bench

        main_job_bench(comm, job.out, job.base, backend, lambda text: _progress(comm, text))
        results_job.finish(comm, job.out, job.base, job.calibration, backend, sorted(STRATEGIES),
                           lambda text: _progress(comm, text))
    code = _finish(results, n, time.time() - job.start_time, backend, comm)
    code = comm.bcast(code, root=0)  # replacements saw only part of the job
    free_comm(comm)
    return code


def restore_world(comm: MPI.Comm, n: int, between: BetweenScenarios) -> MPI.Comm:
    """Spawn replacements until ``comm`` has ``n`` ranks again (after shrinking scenarios)."""
    missing = n - comm.Get_size()
    if missing <= 0:
        return comm
    from mpibench.faults.respawn import spawn

    _progress(comm, f"respawning {missing} rank(s) to restore the world size {n}")
    merged, _ = spawn(comm, missing, between)
    free_comm(comm)
    return merged


def replacement_entry(comm: MPI.Comm, continuation) -> int:
    """Where a spawned replacement enters the job (handed to the fault layer's
    ``replacement_main``): inside a scenario, or between two of the main job's."""
    from mpibench.faults.respawn import Resume

    if isinstance(continuation, Resume):
        records = RunRecords.joining(continuation.after.out)
        config, summary, comm = resume_scenario(comm, continuation, records)
        return continue_after_scenario(comm, continuation.after, config, summary, records)
    if isinstance(continuation, BetweenScenarios):
        job = continuation.job
        return _main_loop(job, comm, continuation.index, RunRecords.joining(job.out), _backend(job.base),
                          continuation.done)
    raise RuntimeError(f"a replacement cannot continue with {continuation!r}")


def continue_after_scenario(comm: MPI.Comm, after, config: RunConfig, summary: Summary, records) -> int:
    """A replacement that finished the scenario it joined: what its spawners do next."""
    if isinstance(after, MainJobAt):
        return _main_loop(after.job, comm, after.index + 1, records, _backend(after.job.base),
                          after.done + ((config, summary),))
    records.close()
    code = _finish([(config, summary)], comm.Get_size(), 0.0, None, comm)
    code = comm.bcast(code, root=0)
    free_comm(comm)
    return code


def _progress(world: MPI.Comm, message: str) -> None:
    if world.Get_rank() == 0:
        print(message, flush=True)


def summary_table(results: list[tuple[RunConfig, Summary]]) -> str:
    w = max([22] + [len(config.scenario) + 2 for config, _ in results])
    header = f"{'scenario':<{w}}{'strategy':<10}{'steps':>6}{'checks':>8}{'violations':>12}{'batch min':>11}{'batch max':>11}"
    lines = [header, "-" * len(header)]
    for config, s in results:
        lines.append(f"{config.scenario:<{w}}{config.strategy:<10}{s.steps:>6}{s.checks:>8}"
                     f"{s.violations:>12}{str(s.batch_min):>11}{str(s.batch_max):>11}")
    return "\n".join(lines)


def _finish(results, ranks: int, wall_s: float, backend=None, comm: MPI.Comm | None = None) -> int:
    # Rank 0 of the job's current communicator prints: replacements are rank 0 of their own world.
    first = (comm or MPI.COMM_WORLD).Get_rank() == 0
    if first:
        print(summary_table(results))
        print(f"wall time {wall_s:.1f} s on {ranks} ranks")
        if backend is not None:
            print(runinfo.transfer_line(backend))
    stuck = [(c, s) for c, s in results if s.error]
    if first:
        for config, summary in stuck:
            print(f"stuck: {config.scenario} under {config.strategy}: {summary.error}", flush=True)
    bad = [(c, s) for c, s in results if s.violations]
    if not bad:
        return 1 if stuck else 0
    if first:
        for config, summary in bad:
            print(violation_message(summary, config, ranks), flush=True)
    return 1
