"""The jobs behind the command line: one run, and the main job over every scenario."""
from __future__ import annotations

import time

from mpi4py import MPI

from . import runinfo
from .config import RunConfig, UsageError
from .records import RunRecords
from .runner import prepare, run_scenario
from .worker import Summary, violation_message

MAIN_STRATEGIES = ("native",)
MAIN_SCENARIOS = ("none",)


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
    records = RunRecords(out if world.Get_rank() == 0 else None)
    _write_run_json(out, config, world, backend)
    start = time.perf_counter()
    summary = run_scenario(config, world, records, backend)
    records.close()
    return _finish([(config, summary)], world.Get_size(), time.perf_counter() - start, backend)


def main_job(base: RunConfig, out: str) -> int:
    from dataclasses import replace

    world = MPI.COMM_WORLD
    plan = [replace(base, scenario=s, strategy=k) for s in MAIN_SCENARIOS for k in MAIN_STRATEGIES]
    for config in plan:
        prepare(config, world.Get_size())
    backend = _backend(base)
    records = RunRecords(out if world.Get_rank() == 0 else None)
    _write_run_json(out, base, world, backend, {"plan": [f"{c.scenario}/{c.strategy}" for c in plan]})
    start = time.perf_counter()
    results = []
    for config in plan:
        _progress(world, f"scenario {config.scenario} under {config.strategy} ...")
        results.append((config, run_scenario(config, world, records, backend)))
    records.close()
    return _finish(results, world.Get_size(), time.perf_counter() - start)


def _progress(world: MPI.Comm, message: str) -> None:
    if world.Get_rank() == 0:
        print(message, flush=True)


def summary_table(results: list[tuple[RunConfig, Summary]]) -> str:
    header = f"{'scenario':<22}{'strategy':<10}{'steps':>6}{'checks':>8}{'violations':>12}{'batch min':>11}{'batch max':>11}"
    lines = [header, "-" * len(header)]
    for config, s in results:
        lines.append(f"{config.scenario:<22}{config.strategy:<10}{s.steps:>6}{s.checks:>8}"
                     f"{s.violations:>12}{str(s.batch_min):>11}{str(s.batch_max):>11}")
    return "\n".join(lines)


def _finish(results, ranks: int, wall_s: float, backend=None) -> int:
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(summary_table(results))
        print(f"wall time {wall_s:.1f} s on {ranks} ranks")
    bad = [(c, s) for c, s in results if s.violations]
    if not bad:
        return 0
    if MPI.COMM_WORLD.Get_rank() == 0:
        for config, summary in bad:
            print(violation_message(summary, config, ranks), flush=True)
    return 1
        if backend is not None:
            print(runinfo.transfer_line(backend))
