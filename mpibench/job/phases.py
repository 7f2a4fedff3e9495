"""The main job's phases on disk: planned in run.json before the first, a record as each ends.

The checker (``mpibench.check.completeness``) reads them back with its own code: a
planned phase without a record never ended, and the run cannot be a pass. Only the
first process of the job's current communicator writes (any process may be killed,
so it is whichever holds rank 0 when the phase ends); every rank may call.
"""
from __future__ import annotations

from mpibench.base import runinfo
from mpibench.base.plan import mark_finished
from mpibench.engine.history import case_id

SWEEP, BENCH, SCALING, REPORT = "sweep", "bench", "scaling", "report"
AFTER_VERDICT = (REPORT,)  # built from the judged folder, so it ends after the job's verdict


def planned(configs, sweep: bool, benchmarks: bool) -> list[str]:
    """The phases in the order the main job runs them: its scenarios' cases, its sweep,
    the benchmarks and scaling (with the calibration), then the page."""
    cases = [case_id(i, c.scenario, c.strategy, c.recovery) for i, c in enumerate(configs)]
    return cases + ([SWEEP] if sweep else []) + ([BENCH, SCALING] if benchmarks else []) + [REPORT]


def write_plan(comm, out: str, phases: list[str]) -> None:
    """``run.json["phases"]``: written before the first phase starts."""
    if comm.Get_rank() == 0:
        runinfo.update(out, {"phases": phases})


def finished(comm, out: str | None, phase: str) -> None:
    if out is not None and comm.Get_rank() == 0:
        mark_finished(out, phase)


def case_finished(comm, out: str | None, index: int, config) -> None:
    """The record of one of the main job's own scenario cases (not a sweep case's folder)."""
    finished(comm, out, case_id(index, config.scenario, config.strategy, config.recovery))


def progress_tag(job, index: int, until: float | None, now: float) -> str:
    """Where the job stands before item ``index``: k of N and the time so far and left.

    The scenarios' time left is the pace so far times what remains (an estimate, said
    so); the sweep's is what is left of its budget."""
    scenarios = job.budgeted_from if job.budgeted_from is not None else len(job.plan)
    elapsed_s = max(0.0, now - job.start_time)
    if index < scenarios:
        left = f", about {elapsed_s / index * (scenarios - index):.0f} s left at this pace" if index else ""
        return f"[{index + 1}/{scenarios}, {elapsed_s:.0f} s so far{left}]"
    budget_left = f", {max(0.0, until - now):.0f} s of its budget left" if until is not None else ""
    return f"[sweep case {index - scenarios + 1} of at most {len(job.plan) - scenarios}{budget_left}]"
