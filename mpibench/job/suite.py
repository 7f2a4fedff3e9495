"""The jobs behind the command line: one run, and the main job over every scenario."""
from __future__ import annotations

import time

from mpi4py import MPI

from mpibench.base import runinfo
from mpibench.base.config import RunConfig, UsageError
from mpibench.base.folder_watch import note_run_folder
from mpibench.base.exits import EXIT_PARTIAL
from mpibench.base.parsing import parse_list
from mpibench.base.records import RunRecords
from mpibench.engine.history import case_id
from mpibench.engine.summary import Summary, violation_message

from . import launch_plan, phases
from .caseloop import run_in_folder, run_plan
from .runfolder import backend_for, open_out, open_records, write_run_json, verdict_status
from .continuation import Batch, BetweenScenarios, MainJob, MainJobAt, SingleRun
from .runner import free_comm, recoverable_dup, resume_scenario

# The main job's scenarios run under these by default: the two classic schemes and the
# size-driven choice between the logarithmic ones, which keeps the job within a few
# minutes on a laptop. MPIBENCH_STRATEGIES picks any checked strategies instead.


def _names_from_env(variable: str, known) -> tuple[str, ...] | None:
    """The comma-separated names in ``variable`` (None when it is unset or blank); a name
    outside ``known`` is bad input, never silently dropped."""
    import os

    text = os.environ.get(variable, "")
    if not text.strip():
        return None
    names = parse_list(text, variable)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"{variable} names {', '.join(unknown)}, not one of {', '.join(known)}")
    return names


def main_strategies(overlap: bool = False) -> list[str]:
    """``MPIBENCH_STRATEGIES`` (comma-separated, from the registry's checked strategies),
    else the registry's ``MAIN_DEFAULT``; with ``--overlap``, from and by default the
    strategies that overlap (registry.overlapping)."""
    from mpibench.sync.registry import CHECKED, MAIN_DEFAULT, overlapping

    known = list(overlapping()) if overlap else list(CHECKED)
    wanted = _names_from_env("MPIBENCH_STRATEGIES", known) or (known if overlap else MAIN_DEFAULT)
    return [name for name in known if name in wanted]


def main_scenarios(world_size: int) -> list[str]:
    """Every named scenario that makes sense at this world size.

    ``MPIBENCH_SCENARIOS`` (comma-separated names) narrows the list: tests run
    many scenarios in one launch this way.
    """
    from mpibench.faults.scenarios import SCENARIOS

    wanted = _names_from_env("MPIBENCH_SCENARIOS", list(SCENARIOS))
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


def single_run(config: RunConfig, out) -> int:
    world = MPI.COMM_WORLD
    caps, not_run = launch_plan.probe_plan(world, [config], restores_world=False)  # bad input fails first
    backend = backend_for(config)
    out, hosts = open_out(world, out)
    note_run_folder(out)  # a crash on any rank from now on is recorded and judged there
    if not_run:
        return _not_run_here(world, config, out, hosts, backend, caps, not_run)
    _progress(world, f"run: scenario {config.scenario} under {config.strategy}, {config.steps} steps "
                     f"on {world.Get_size()} rank(s) -> {out}")
    start = time.perf_counter()
    summary, comm = run_in_folder(config, recoverable_dup(world), backend, SingleRun(out), hosts)
    wall_s = time.perf_counter() - start
    if comm.Get_rank() == 0:  # what the launch could do, beside the config run.json already holds
        runinfo.update(out, launch_plan.run_json_fields(caps, [config], not_run))
    if comm.Get_rank() == 0:
        print(f"timing: {summary.steps} steps, loop {wall_s - summary.check_s:.6f} s, "
              f"online check {summary.check_s:.6f} s", flush=True)
    code = _finish([(config, summary)], world.Get_size(), wall_s, backend, comm, out)
    code = comm.bcast(code, root=0)
    free_comm(comm)
    return code


def _not_run_here(world, config: RunConfig, out: str, hosts, backend, caps, not_run) -> int:
    """A single run this launch cannot support: its folder says so, and so does the status."""
    write_run_json(out, config, world, backend, {"cases": [],
                                                  **launch_plan.run_json_fields(caps, [config], not_run)},
                   hosts=hosts)
    launch_plan.announce(world, out, caps, [config], not_run)
    return EXIT_PARTIAL


def main_job(base: RunConfig, out, plan_sweep=None) -> int:
    """The named scenarios under every main strategy, then the job's own short sweep,
    then the benchmarks. ``plan_sweep(base, world, out)``: plans that sweep (the command
    line hands it down from the drivers); it returns an object with ``configs``, ``outs``,
    ``budget_s`` and ``judge(comm, out, results, until) -> status``. None: no sweep."""
    from dataclasses import replace

    world = MPI.COMM_WORLD
    plan = [replace(base, scenario=s, strategy=k) for s in main_scenarios(world.Get_size())
            for k in main_strategies(base.overlap)]
    caps, not_run = launch_plan.probe_plan(world, plan, restores_world=True)
    out, hosts = open_out(world, out)
    note_run_folder(out)  # a crash on any rank from now on is recorded and judged there
    _progress(world, f"main job: {len(plan)} runs on {world.Get_size()} rank(s) -> {out}")
    launch_plan.announce(world, out, caps, plan, not_run)
    left_out = _too_small_for(world.Get_size())
    if left_out:
        _progress(world, f"left out at {world.Get_size()} rank(s): " + ", ".join(left_out))
    backend = backend_for(base)
    from . import finish as results_job

    calibration = None
    if _benchmarks_wanted():
        _progress(world, "calibrating (ping-pong, reduction, compute) ...")
        calibration = results_job.start(world, base)  # while the job is still quiet
    records = open_records(world, out)
    # The main job's config names what it ran, not the single-run defaults it was built from.
    write_run_json(out, base, world, backend, {"plan": [f"{c.scenario}/{c.strategy}" for c in plan],
                                                # the cases that run; those left out are under not_run
                                                "cases": [case_id(i, c.scenario, c.strategy, c.recovery)
                                                          for i, c in enumerate(plan) if i not in not_run],
                                                "calibration": calibration.as_dict() if calibration else None,
                                                **launch_plan.run_json_fields(caps, plan, not_run)},
                    job={"job": "main", "strategy": main_strategies(base.overlap),
                         "scenario": list(dict.fromkeys(c.scenario for c in plan))}, hosts=hosts)
    sweep = plan_sweep(base, world, out) if plan_sweep else None  # short random cases after the scenarios
    phases.write_plan(world, out, phases.planned(plan, bool(sweep and sweep.configs), calibration is not None))
    skip = frozenset(not_run) | launch_plan.sweep_left_out(world, caps, sweep.configs if sweep else [], len(plan))
    job = MainJob(tuple(plan) + tuple(sweep.configs if sweep else ()), world.Get_size(), out, base, calibration,
                  time.time(), outs=(None,) * len(plan) + tuple(sweep.outs if sweep else ()),
                  budgeted_from=len(plan), sweep_s=sweep.budget_s if sweep else 0.0, sweep=sweep,
                  skip=skip, not_run=len(not_run))
    return _main_loop(job, recoverable_dup(world), 0, records, backend)


def _shared_records(job) -> RunRecords:
    """A joining process's records in the job's own folder (a batch has none)."""
    return RunRecords.joining(job.out) if job.out is not None else RunRecords(None)


def _main_loop(job: MainJob, comm: MPI.Comm, first: int, records, backend, done=(), until=None) -> int:
    """Items ``first``.. of the main job (its scenarios, then its sweep cases), the world size
    restored before each, then the benchmarks. Replacements spawned on the way enter here too,
    with ``done``: the items already run."""
    from . import finish as results_job

    results, comm, until = run_plan(job, comm, first, records, backend, done, until)
    records.close()
    scenarios = [(c, s) for c, s, own in results if own is None]
    sweep_code = 0
    if job.sweep and job.sweep.configs:
        sweep_code = job.sweep.judge(comm, job.out, results, until)
        phases.finished(comm, job.out, phases.SWEEP)
    if job.calibration is not None:
        from mpibench.sync.registry import BASELINE

        from .bench import main_job_bench

        main_job_bench(comm, job.out, job.base, backend, lambda text: _progress(comm, text))
        phases.finished(comm, job.out, phases.BENCH)
        strategies = sorted(set(main_strategies(job.base.overlap)) | {BASELINE})
        results_job.finish(comm, job.out, job.base, job.calibration, backend, strategies,
                           lambda text: _progress(comm, text))
        phases.finished(comm, job.out, phases.SCALING)
    # Judged first, then the page from the judged folder: it shows the verdict.json just written.
    code = _worst(_finish(scenarios, job.world_size, time.time() - job.start_time, backend, comm, job.out,
                          phases.AFTER_VERDICT), sweep_code)
    code = launch_plan.partial_status(code, job.not_run)
    if comm.Get_rank() == 0:
        results_job.write_page(job.out)
        phases.finished(comm, job.out, phases.REPORT)
    code = comm.bcast(code, root=0)  # replacements saw only part of the job
    free_comm(comm)
    return code


def _worst(job_code: int | None, sweep_code: int) -> int | None:
    """The main job's status with its sweep's: a failure anywhere fails the job."""
    if job_code is None:
        return None
    return 1 if 1 in (job_code, sweep_code) else max(job_code, sweep_code)


def _loop_of(job):
    """The loop a job of this kind runs (main job or batch); replacements re-enter it."""
    if isinstance(job, Batch):
        from .batch import batch_loop

        return batch_loop
    return _main_loop


def replacement_entry(comm: MPI.Comm, continuation) -> int:
    """Where a spawned replacement enters the job (handed to the fault layer's
    ``replacement_main``): inside a scenario, or between two items of a main job or batch."""
    from mpibench.faults.respawn import Resume

    note_run_folder(_job_folder(continuation))
    if isinstance(continuation, Resume):
        records = RunRecords.joining(continuation.after.out)
        config, summary, comm = resume_scenario(comm, continuation, records)
        return continue_after_scenario(comm, continuation.after, config, summary, records)
    if isinstance(continuation, BetweenScenarios):
        job = continuation.job
        return _loop_of(job)(job, comm, continuation.index, _shared_records(job), backend_for(job.base),
                             continuation.done, continuation.until)
    raise RuntimeError(f"a replacement cannot continue with {continuation!r}")


def _job_folder(continuation) -> str | None:
    """The folder the job that spawned this replacement judges (a batch has none of its own)."""
    after = getattr(continuation, "after", continuation)
    job = getattr(after, "job", None)
    return job.out if job is not None else getattr(after, "out", None)


def continue_after_scenario(comm: MPI.Comm, after, config: RunConfig, summary: Summary, records) -> int:
    """A replacement that finished the scenario it joined: what its spawners do next."""
    if isinstance(after, MainJobAt):
        job = after.job
        own = after.index < len(job.outs) and job.outs[after.index] is not None
        if own:  # a case in its own folder: judged there, then the job's own records go on
            from .caseloop import finish_case

            records.close()
            finish_case(comm, config, summary, after.out, 0.0)
            records = _shared_records(job)
        if not own:
            phases.case_finished(comm, job.out, after.index, config)
        done = after.done + ((config, summary, after.out if own else None),)
        return _loop_of(job)(job, comm, after.index + 1, records, backend_for(job.base), done, after.until)
    records.close()
    code = _finish([(config, summary)], comm.Get_size(), 0.0, None, comm, after.out)
    code = comm.bcast(code, root=0)
    free_comm(comm)
    return code


def _progress(world: MPI.Comm, message: str) -> None:
    if world.Get_rank() == 0:
        print(message, flush=True)


def summary_table(results: list[tuple[RunConfig, Summary]]) -> str:
    w = max([22] + [len(config.scenario) + 2 for config, _ in results])
    width = max([14] + [len(c.strategy) + 2 for c, _ in results])
    header = (f"{'scenario':<{w}}{'strategy':<{width}}{'steps':>6}{'checks':>8}{'violations':>12}"
              f"{'batch min':>11}{'batch max':>11}")
    lines = [header, "-" * len(header)]
    for config, s in results:
        lines.append(f"{config.scenario:<{w}}{config.strategy:<{width}}{s.steps:>6}{s.checks:>8}"
                     f"{s.violations:>12}{str(s.batch_min):>11}{str(s.batch_max):>11}")
    return "\n".join(lines)


def _finish(results, ranks: int, wall_s: float, backend=None, comm: MPI.Comm | None = None,
            out: str | None = None, after_verdict=()) -> int | None:
    """Print the summary; the first live member judges the whole run from its history
    (verdict.json, invariants.csv in ``out``) and returns the exit status (None elsewhere)."""
    # Rank 0 of the job's current communicator prints: replacements are rank 0 of their own world.
    if (comm or MPI.COMM_WORLD).Get_rank() != 0:
        return None
    print(summary_table(results))
    print(f"wall time {wall_s:.1f} s on {ranks} ranks")
    if backend is not None:
        print(runinfo.transfer_line(backend))
    stuck = [(c, s) for c, s in results if s.error]
    for config, summary in stuck:
        print(f"stuck: {config.scenario} under {config.strategy}: {summary.error}", flush=True)
    for config, summary in results:
        if summary.first_violation is not None:
            print(violation_message(summary, config, ranks), flush=True)
    code = verdict_status(out, [s.case_verdict for _, s in results if s.case_verdict is not None], after_verdict)
    return 1 if stuck else code


