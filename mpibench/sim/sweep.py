"""``sweep --engine sim``: cases run simulated, findings shrunk, and every finding replayed on real MPI.

The cases are the random sweep's (:class:`mpibench.drive.sweep.SweepPlan`) or
every interleaving of a small world (:mod:`.exhaustive`). Each runs on the
simulated engine in this process, or with ``jobs`` in one of that many forked
processes (:func:`.cases.run_case_sim`), and is judged
as a real case; sweep.csv gets the real sweep's columns plus ``tag``
(``simulated``). A case that did not pass is shrunk with the drivers' own
minimiser (its runs simulated too), then its original and minimal schedules
are run as real ``mpirun`` jobs: the finding is "reproduced on MPI" when the
real job also fails (the same invariant, for a violation), else "simulation
only" -- a difference between the simulated and the real library, itself a
finding. A launch may resume the record an earlier one left (:class:`Record`):
its rows stay, and only the cases it lacks run.
"""
from __future__ import annotations

import csv
import json
import shutil
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable

from mpibench.base.records import SWEEP_COLUMNS, CsvLog
from mpibench.drive.batching import case_folder
from mpibench.drive.cases import OK, VIOLATION, Outcome, replay_command, run_case, write_case
from mpibench.drive.minimise import Candidate, shrink
from mpibench.drive.sweep import SWEEP_EXTRA_COLUMNS

from .cases import run_case_sim, sim_replay
from .jobs import TAG, SimSettings

FINDING_COLUMNS = ["case", "outcome", "first_violation", "replay", "minimal_replay", "mpi_outcome",
                   "mpi_first_violation", "mpi_replay", "on_mpi"]


@dataclass
class Finding:
    outcome: Outcome
    mpi: Outcome | None = None  # the real job's, when replayed
    on_mpi: str = "not replayed"  # "reproduced on MPI" | "simulation only" | "not replayed"


def _same(sim: Outcome, real: Outcome) -> bool:
    if real.outcome == OK:
        return False
    if sim.outcome == VIOLATION:
        return real.outcome == VIOLATION and real.first_invariant == sim.first_invariant
    return real.outcome == sim.outcome


def minimise_sim(outcome: Outcome, out: Path, settings: SimSettings, runs: int) -> Outcome:
    """The smallest schedule that still fails the same way, every try simulated."""
    case = outcome.case
    folder = case_folder(out, case) / "shrink"
    tries = iter(range(1_000_000))
    last: dict = {}

    def still_fails(cand: Candidate) -> bool:
        trial = replace(case, case_id=f"{case.case_id}-t{next(tries)}", workers=cand.workers, steps=cand.steps,
                        schedule=cand.schedule)
        result = run_case_sim(trial, folder / trial.case_id, settings)
        if result.outcome == outcome.outcome and result.first_invariant == outcome.first_invariant:
            last["outcome"] = result
            return True
        return False

    result = shrink(Candidate(case.workers, case.steps, case.schedule), still_fails, runs)
    m = result.minimal
    minimal = replace(case, case_id=f"{case.case_id}-minimal", workers=m.workers, steps=m.steps, schedule=m.schedule)
    write_case(minimal, case_folder(out, case) / "minimal")
    outcome.minimal = sim_replay(minimal, case_folder(out, case) / "minimal")
    return last.get("outcome", outcome) if m != Candidate(case.workers, case.steps, case.schedule) else outcome


def replay_on_mpi(finding: Finding, out: Path, mpiexec: list[str], deadline_s: float) -> None:
    case = finding.outcome.case
    folder = case_folder(out, case) / "mpi"
    finding.mpi = run_case(case, folder, mpiexec, deadline_s)
    finding.on_mpi = "reproduced on MPI" if _same(finding.outcome, finding.mpi) else "simulation only"


@dataclass
class Record:
    """What an earlier launch of the sweep left in its folder: sweep.csv's and findings.csv's rows."""

    rows: list = field(default_factory=list)
    findings: list = field(default_factory=list)

    @property
    def done(self) -> set[str]:
        return {row["case"] for row in self.rows}


def read_record(out: Path) -> Record:
    """The sweep record in ``out`` (empty when there is none)."""
    def rows(name: str) -> list[dict]:
        try:
            with open(out / name, newline="") as f:
                return list(csv.DictReader(f))
        except FileNotFoundError:
            return []
    return Record(rows("sweep.csv"), rows("findings.csv"))


def write_tables(outcomes: list[Outcome], findings: list[Finding], out: Path, before: Record | None = None) -> None:
    before = before or Record()
    sweep = CsvLog(str(out / "sweep.csv"), SWEEP_COLUMNS + SWEEP_EXTRA_COLUMNS + ["tag"])
    for row in before.rows:
        sweep.write(row)
    for o in outcomes:
        sweep.write({**o.row(), "tag": TAG})
    sweep.close()
    table = CsvLog(str(out / "findings.csv"), FINDING_COLUMNS)
    for row in before.findings:
        table.write(row)
    for f in findings:
        o, m = f.outcome, f.mpi
        table.write({"case": o.case.case_id, "outcome": o.outcome, "first_violation": o.first_violation,
                     "replay": o.replay, "minimal_replay": o.minimal,
                     "mpi_outcome": m.outcome if m else "", "mpi_first_violation": m.first_violation if m else "",
                     "mpi_replay": m.replay if m else "", "on_mpi": f.on_mpi})
    table.close()


def _run_one(job: tuple) -> Outcome:
    case, out, settings, deadline_s = job
    folder = case_folder(out, case)
    if folder.exists():  # begun by a launch that ended before recording it (a resume runs it again)
        shutil.rmtree(folder)
    return run_case_sim(case, folder, settings, deadline_s)


def _outcomes(cases: Iterable, out: Path, settings: SimSettings, deadline_s: float, jobs: int):
    """Each case's outcome, in plan order; ``jobs`` > 1: that many forked processes run them
    (each case is a whole simulated world, independent of the others; the forks inherit this
    process's installed engine and write only under their cases' own folders)."""
    work = ((case, out, settings, deadline_s) for case in cases)
    if jobs <= 1:
        yield from map(_run_one, work)
        return
    import multiprocessing

    # The first case runs here: the modules a case needs are then imported once, before the forks.
    first = next(work, None)
    if first is None:
        return
    yield _run_one(first)
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        yield from pool.imap(_run_one, work, chunksize=4)


def run_sim_sweep(cases: Iterable, out: Path, settings: SimSettings = SimSettings(), mpiexec: list[str] | None = None,
                  shrink_runs: int = 30, deadline_s: float = 180.0, time_budget_s: float | None = None,
                  total: int | None = None, stream=None, jobs: int = 1,
                  before: "Record | None" = None) -> tuple[list[Outcome], list[Finding], float]:
    """Run every case simulated (until the budget), shrink and replay the findings; (outcomes, findings, wall s).

    ``before``: the record of an earlier launch into ``out`` that this one resumes (its rows are
    kept in the tables; its cases are not in ``cases``)."""
    stream = stream or sys.stderr
    out.mkdir(parents=True, exist_ok=True)
    before = before or Record()
    start = time.perf_counter()
    outcomes, findings = [], []
    running = _outcomes(cases, out, settings, deadline_s, jobs)
    try:
        for outcome in running:
            outcomes.append(outcome)
            case = outcome.case
            if outcome.outcome != OK:
                findings.append(Finding(outcome))
                stream.write(f"\nfinding [{TAG}]: {case.case_id}: {outcome.outcome}: {outcome.first_violation}\n")
            if len(outcomes) % 200 == 0:
                rate = len(outcomes) / (time.perf_counter() - start) * 3600
                stream.write(f"sweep [{TAG}]: {len(before.rows) + len(outcomes)}{'/' + str(total) if total else ''} "
                             f"cases, {len(before.findings) + len(findings)} finding(s), {rate:,.0f} cases/hour\n")
                write_tables(outcomes, findings, out, before)
            if time_budget_s is not None and time.perf_counter() - start > time_budget_s:
                break
    finally:
        running.close()  # ends the forked runners (a case they had begun is not recorded)
    run_s = time.perf_counter() - start
    for finding in findings:
        if shrink_runs > 0:
            minimise_sim(finding.outcome, out, settings, shrink_runs)
        if mpiexec:
            replay_on_mpi(finding, out, mpiexec, deadline_s)
            stream.write(f"{finding.outcome.case.case_id}: {finding.on_mpi} (real MPI: {finding.mpi.outcome} "
                         f"{finding.mpi.first_violation})\n")
    write_tables(outcomes, findings, out, before)
    return outcomes, findings, run_s


def write_summary(out: Path, outcomes, findings, run_s: float, wall_s: float, what: dict,
                  before: Record | None = None) -> str:
    """sweep.json: the whole record (an earlier launch resumed included); the rate is this launch's."""
    before = before or Record()
    rate = len(outcomes) / run_s * 3600 if run_s > 0 else 0.0
    kinds = [o.outcome for o in outcomes] + [row["outcome"] for row in before.rows]
    labels = [f.on_mpi for f in findings] + [row["on_mpi"] for row in before.findings]
    summary = {"tag": TAG, **what, "cases": len(kinds), "findings": len(labels),
               "launch_cases": len(outcomes), "launch_findings": len(findings), "resumed_cases": len(before.rows),
               "cases_wall_s": round(run_s, 3), "total_wall_s": round(wall_s, 3), "cases_per_hour": round(rate),
               "by_outcome": {k: kinds.count(k) for k in sorted(set(kinds))},
               "on_mpi": {k: labels.count(k) for k in sorted(set(labels))}}
    (out / "sweep.json").write_text(json.dumps(summary, indent=2) + "\n")
    resumed = f" (+{len(before.rows)} from the earlier launch resumed)" if before.rows else ""
    return (f"sweep [{TAG}]: {len(outcomes)} cases in {run_s:.1f} s ({rate:,.0f} cases/hour){resumed}, "
            f"{len(labels)} finding(s)" + "".join(f"; {n} {k}" for k, n in summary["on_mpi"].items()))


__all__ = ["run_sim_sweep", "write_summary", "replay_command"]
