"""The jobs behind the command line: one run, and the main job over every scenario."""
from __future__ import annotations

import time

from mpi4py import MPI

from . import runinfo
from .config import RunConfig, UsageError
from .records import RunRecords
from .runner import free_comm, prepare, recoverable_dup, run_scenario, run_scenario_on
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
    start = time.perf_counter()
    summary, comm = run_in_folder(config, out, recoverable_dup(world), backend, {"kind": "single"})
    code = _finish([(config, summary)], world.Get_size(), time.perf_counter() - start, backend, comm)
    code = comm.bcast(code, root=0)
    free_comm(comm)
    return code


def run_in_folder(config: RunConfig, out: str, comm: MPI.Comm, backend, continuation) -> tuple[Summary, MPI.Comm]:
    """One run that writes its own output folder (steps, invariants, faults, run.json): a
    single ``run``, and each case of a batch, so a batch case's folder is the one its replay
    command writes."""
    records = RunRecords(out if comm.Get_rank() == 0 else None)
    _write_run_json(out, config, comm, backend)
    summary, comm = run_scenario_on(config, comm, records, backend, continuation=continuation)
    records.close()
    return summary, comm


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
    records = RunRecords(out if world.Get_rank() == 0 else None)
    _write_run_json(out, base, world, backend, {"plan": [f"{c.scenario}/{c.strategy}" for c in plan],
                                                "calibration": calibration.as_dict() if calibration else None})
    from .jobsweep import plan_job_sweep

    sweep = plan_job_sweep(base, world, out)  # short random cases after the scenarios
    job = {"kind": "main", "plan": plan + sweep.configs, "outs": [None] * len(plan) + sweep.outs,
           "budgeted": set(range(len(plan), len(plan) + len(sweep.configs))), "sweep_s": sweep.budget_s,
           "sweep": sweep, "index": 0, "n": world.Get_size(), "out": out, "base": base,
           "calibration": calibration, "start": time.time()}
    return _main_loop(job, recoverable_dup(world), 0, records, backend)


def _main_loop(job: dict, comm: MPI.Comm, first: int, records, backend, resumed=None) -> int:
    """Items ``first``.. of the main job (scenarios, then its sweep cases), then the
    benchmarks. Replacements spawned on the way enter here too."""
    from mpibench.results import job as results_job

    results, comm = run_plan(job, comm, first, records, backend, resumed)
    records.close()
    from mpibench.sync import STRATEGIES

    from .jobsweep import finish_job_sweep

    scenarios = [(c, s) for c, s, out in results if out is None]
    sweep_code = finish_job_sweep(comm, job, results)
    if job["calibration"] is not None:
        from .bench import main_job_bench

        main_job_bench(comm, job["out"], job["base"], backend, lambda text: _progress(comm, text))
        results_job.finish(comm, job["out"], job["base"], job["calibration"], backend, sorted(STRATEGIES),
                           lambda text: _progress(comm, text))
    code = max(_finish(scenarios, job["n"], time.time() - job["start"], backend, comm), sweep_code)
    code = comm.bcast(code, root=0)  # replacements saw only part of the job
    free_comm(comm)
    return code


def run_plan(job: dict, comm: MPI.Comm, first: int, records, backend, resumed=None):
    """Runs ``job["plan"][first:]`` one after another in this launch, the world size restored
    before each; returns ``[(config, summary, out), ...]`` and the communicator left at the end.

    ``job["outs"][i]`` is the output folder of item i (None: the job's shared ``records``);
    an item in ``job["budgeted"]`` runs only while rank 0's clock is before ``job["until"]``
    (the decision is broadcast, so every member skips alike).
    """
    plan, n = job["plan"], job["n"]
    outs = job.get("outs") or [None] * len(plan)
    results = [resumed] if resumed else []
    for index in range(first, len(plan)):
        comm = restore_world(comm, n, {**job, "index": index})
        config, out, continuation = plan[index], outs[index], {**job, "index": index}
        if index in job.get("budgeted", ()):
            job.setdefault("until", time.time() + job["sweep_s"])  # rank 0's clock decides
            if not _within_budget(comm, job):
                continue
        what = f"case {_case_name(out)}" if out else f"scenario {config.scenario}"
        _progress(comm, f"{what} under {config.strategy} ...")
        if out is None:
            summary, comm = run_scenario_on(config, comm, records, backend, continuation=continuation)
        else:
            start = time.perf_counter()
            try:
                summary, comm = run_in_folder(config, out, comm, backend, continuation)
            except UsageError as exc:  # found alike on every rank before training: the case's run exits 2
                if comm.Get_rank() == 0:
                    write_case_status(out, 2, str(exc), time.perf_counter() - start)
                continue
            if comm.Get_rank() == 0:
                write_case_status(out, _exit_status([(config, summary)]), summary.error,
                                  time.perf_counter() - start)
        results.append((config, summary, out))
    if job.get("restore_at_end", True):  # a batch ends here: no world to restore for
        comm = restore_world(comm, n, {**job, "index": len(plan)})
    return results, comm


def _case_name(out: str) -> str:
    import os

    return os.path.basename(os.path.dirname(os.path.normpath(out)))


def _within_budget(comm: MPI.Comm, job: dict) -> bool:
    return comm.bcast(time.time() < job["until"] if comm.Get_rank() == 0 else None, root=0)


def write_case_status(out: str, exit_status: int, stuck: str | None, wall_s: float) -> None:
    """``case-status.json``: the exit status the case's own ``run`` command would have had."""
    import json
    import os

    path = os.path.join(out, "case-status.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"exit_status": exit_status, "stuck": stuck, "wall_s": round(wall_s, 3)}, f)
    os.replace(path + ".tmp", path)


def restore_world(comm: MPI.Comm, n: int, job: dict) -> MPI.Comm:
    """Spawn replacements until ``comm`` has ``n`` ranks again (after shrinking scenarios)."""
    missing = n - comm.Get_size()
    if missing <= 0:
        return comm
    from mpibench.faults.respawn import spawn

    _progress(comm, f"respawning {missing} rank(s) to restore the world size {n}")
    merged, _ = spawn(comm, missing, {"kind": "between", "continuation": job})
    free_comm(comm)
    return merged


def _loop_of(job: dict):
    """The loop a job of this kind runs (main job or batch); replacements re-enter it."""
    if job["kind"] == "batch":
        from .batch import batch_loop

        return batch_loop
    return _main_loop


def continue_main_job(comm: MPI.Comm, job: dict, index: int) -> int:
    """A replacement spawned between items: run the rest of the job."""
    return _loop_of(job)(job, comm, index, RunRecords(None), _backend(job["base"]))


def continue_after_scenario(comm: MPI.Comm, continuation, config: RunConfig, summary: Summary) -> int:
    """A replacement that finished the scenario it joined: what its spawners do next."""
    if continuation and continuation.get("kind") in ("main", "batch"):
        backend = _backend(continuation["base"])
        outs = continuation.get("outs")
        out = outs[continuation["index"]] if outs else None
        return _loop_of(continuation)(continuation, comm, continuation["index"] + 1, RunRecords(None), backend,
                                      resumed=(config, summary, out))
    code = _finish([(config, summary)], comm.Get_size(), 0.0, None, comm)
    code = comm.bcast(code, root=0)
    free_comm(comm)
    return code


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
    if first:
        for config, summary in bad:
            print(violation_message(summary, config, ranks), flush=True)
    return _exit_status(results)


def _exit_status(results) -> int:
    """A run's exit status: 1 when an invariant was violated or the run got stuck, else 0."""
    return 1 if any(s.violations or s.error for _, s in results) else 0
