"""What ``sweep --engine sim`` does: check the request, plan the cases, run them simulated, report."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mpibench.base.config import UsageError

from .jobs import TAG


@dataclass(frozen=True)
class SimSweepRequest:
    seeds: int
    workers: tuple[int, ...]
    strategies: tuple[str, ...]
    steps: int
    first_seed: int
    swarm: bool
    exhaustive: bool
    engine: str
    run_parts: str  # '': production parts; else every case's --run-parts MODULE:NAME
    shrink_runs: int
    case_deadline_s: float
    time_budget_min: float | None
    mpiexec: str | None  # "": do not replay findings on MPI; None: the default launcher
    out: object  # the validated OutRequest
    recoveries: tuple[str, ...] = ("shrink",)  # --exhaustive: each interleaving under each
    jobs: int = 1  # cases run at the same time (forked processes)
    resume: bool = False  # go on from the record an earlier launch left in --out
    momentum: float = 0.0  # --exhaustive: optimizer state in every case; refused schedules left out
    overlap: bool = False  # every case runs with run --overlap


def _plan(r: SimSweepRequest):
    extra = (("--run-parts", r.run_parts) if r.run_parts else ()) + (("--overlap",) if r.overlap else ())
    if r.exhaustive:
        from .exhaustive import ExhaustivePlan

        workers = r.workers if r.workers != (2, 3, 5, 8) else (2, 3, 4)  # the sweep's default means "small"
        if max(workers) > 4:
            raise UsageError(f"--exhaustive enumerates worlds of at most 4 workers, got {max(workers)}")
        steps = 4 if r.steps == 10 else max(r.steps, 4)  # the sweep's default 10 means "the plan's own"
        plan = ExhaustivePlan(workers=workers, strategies=r.strategies, steps=steps, recoveries=r.recoveries,
                              momentum=r.momentum)
        cases = plan.cases()
        if extra:
            from dataclasses import replace

            cases = (replace(c, extra=c.extra + extra) for c in cases)
        what = {"plan": "exhaustive", "workers": list(workers), "recoveries": list(r.recoveries)}
        if r.momentum:  # the refused schedules are not cases: how many, and why
            what["momentum"] = r.momentum
            what["refused"] = {f"n{p}-{s}-{rec}": plan.refusals(p, s, rec) for p, s, rec in plan.blocks()}
        return cases, plan.count(), what
    if r.momentum:
        raise UsageError("--momentum needs --exhaustive (it leaves out the schedules run would refuse)")
    from mpibench.drive.sweep import SweepPlan

    plan = SweepPlan(None if r.time_budget_min else r.seeds, r.workers, r.strategies, r.steps, r.first_seed,
                     extra, r.swarm)
    total = None if r.time_budget_min else len(plan.cases())
    return plan.stream(), total, {"plan": "swarm" if r.swarm else "random", "workers": list(r.workers)}


def _out_folder(r: SimSweepRequest, what: dict):
    """The sweep's folder and the record it resumes (--resume: an earlier launch's, which must be there)."""
    from mpibench.job.outdir import OutDirError, resolve

    from .sweep import Record, read_record

    if not r.resume:
        try:
            return Path(resolve(r.out)), Record()
        except OutDirError as exc:
            raise UsageError(str(exc)) from None
    if r.out.path is None or not (Path(r.out.path) / "sweep.csv").is_file():
        raise UsageError("--resume goes on from an earlier sweep's folder: give it as --out "
                         f"({r.out.path or 'no --out given'} holds no sweep.csv)")
    if r.out.force:
        raise UsageError("--resume keeps the folder's record and --force removes it: give one of them")
    out = Path(r.out.path)
    try:
        earlier = json.loads((out / "sweep.json").read_text())
    except (OSError, ValueError):
        earlier = {}  # an earlier launch ended before its summary: its rows are the record
    # what decides the cases (not --jobs, not the replays); a summary without momentum had none
    plan = {**what, "strategies": list(r.strategies), "momentum": r.momentum}
    earlier = {**earlier, "momentum": earlier.get("momentum", 0.0)} if earlier else {}
    other = [k for k in ("plan", "workers", "recoveries", "strategies", "momentum")
             if k in earlier and earlier[k] != plan.get(k)]
    if other:
        raise UsageError(f"--resume: {out} holds a sweep of another plan ({', '.join(other)} differ); "
                         "give the same --workers, --strategies, --recoveries and --momentum, or another --out")
    return out, read_record(out)


def sim_sweep_command(r: SimSweepRequest) -> int:
    """Exit 0 when every case held every invariant, 1 otherwise (3: the replays could not launch)."""
    if r.engine != "sim":
        raise UsageError("--exhaustive needs --engine sim")
    from mpibench.drive.launch import LaunchError, launcher_argv, preflight

    from .process import install
    from .sweep import run_sim_sweep, write_summary

    install()
    cases, total, what = _plan(r)
    mpiexec = None
    if r.mpiexec != "":
        try:
            preflight(r.mpiexec, max(r.workers))
        except LaunchError as exc:  # the replays need the launcher: "could not run", never a pass
            print(f"mpibench: could not run: {exc}", file=sys.stderr, flush=True)
            return 3
        mpiexec = launcher_argv(r.mpiexec)
    out, before = _out_folder(r, what)
    cases = (c for c in cases if c.case_id not in before.done) if before.rows else cases
    start = time.perf_counter()
    left = f"{total - len(before.done)} of {total}" if before.rows and total is not None else total
    print(f"sweep [{TAG}]: {left if total is not None else 'open-ended'} case(s), {what['plan']} plan -> {out}",
          flush=True)
    outcomes, findings, run_s = run_sim_sweep(
        cases, out, shrink_runs=r.shrink_runs, deadline_s=r.case_deadline_s, mpiexec=mpiexec, total=total,
        time_budget_s=r.time_budget_min * 60 if r.time_budget_min else None, jobs=r.jobs, before=before)
    line = write_summary(out, outcomes, findings, run_s, time.perf_counter() - start,
                         {**what, "strategies": list(r.strategies), "replayed_on_mpi": mpiexec is not None,
                          "jobs": r.jobs, "plan_cases": total}, before)
    print(line, flush=True)
    for f in findings:
        print(f"  {f.outcome.case.case_id}: {f.outcome.outcome} {f.outcome.first_violation} [{f.on_mpi}]\n"
              f"    simulated replay: {f.outcome.replay}\n"
              + (f"    minimal: {f.outcome.minimal}\n" if f.outcome.minimal else "")
              + (f"    MPI replay: {f.mpi.replay}" if f.mpi else ""), flush=True)
    return 0 if not findings and not before.findings else 1  # a resumed record's findings count too
