"""Differential testing: each case on the simulated engine and as a real MPI job, rows compared.

A case's correctness rows (``steps.csv``, ``invariants.csv``, ``faults.csv``, wall-clock
``_s`` columns aside), its verdict and its outcome are functions of its inputs on a correct
engine: the seed, the options, the fault schedule and ``auto``'s record of choices. So the
same case must give the same rows, byte for byte, on both engines; a difference is a finding
about one of them, reported with both replay commands.

``auto``'s choice is an input, not an output (it fixes the summation order): each case is
first simulated once to learn which entries its ``auto`` record needs and what the virtual
timings choose; both engines then read that record (the real job through its own
``MPIBENCH_AUTO_CHOICES`` file in the output folder, never the machine's record), so the
comparison is of everything else.
"""
from __future__ import annotations

import csv
import io
import contextlib
import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from mpibench.drive.batching import Batch, case_folder, run_batch
from mpibench.drive.cases import STATUS_FILE, Case, Outcome, batch_case_job, judge, replay_command, write_case
from mpibench.drive.launch import JobResult
from mpibench.faults.scenarios import SCENARIOS, build
from mpibench.sync.auto_choices import read_record
from mpibench.sync.registry import BASELINE, CHECKED, lookup

from .cases import TAIL_CHARS, config_of, sim_replay
from .jobs import SimSettings, simulate_run

STRATEGIES = (*CHECKED, BASELINE)
RECOVERIES = ("shrink", "respawn")
CORRECTNESS_FILES = ("steps.csv", "invariants.csv", "faults.csv")
COLUMNS = ["case", "workers", "strategy", "recovery", "scenario", "sim_outcome", "mpi_outcome", "same",
           "difference", "sim_replay", "mpi_replay"]


def matrix_cases(sizes=(2, 3, 4), strategies=STRATEGIES, recoveries=RECOVERIES, steps: int = 5,
                 seed: int = 0, scenarios=None, extra: tuple[str, ...] = ()) -> list[Case]:
    """Every named scenario (at the sizes it allows) x strategy x recovery x world size; ``extra``:
    further ``run`` options of every case (``--overlap``), named at the end of its id."""
    cases, tail = [], "".join("-" + a.lstrip("-") for a in extra)
    for p in sizes:
        for name in scenarios or SCENARIOS:
            if p < SCENARIOS[name][1]:
                continue
            schedule = build(name, p)
            for recovery in recoveries:
                for strategy in strategies:
                    cases.append(Case(f"t-n{p}-{strategy}-{recovery}-{name}{tail}", seed, p, strategy, recovery,
                                      steps, schedule, tuple(extra)))
    return cases


def sampled_sweep_cases(count: int, seed: int, sizes=(2, 3, 4), steps: int = 5) -> list[Case]:
    """``count`` of the random sweep's cases, drawn by a generator seeded with ``seed``."""
    from mpibench.drive.sweep import SweepPlan

    draw = random.Random(seed)
    plan = SweepPlan(seeds=None, workers=tuple(sizes), strategies=STRATEGIES, steps=steps)
    picked = []
    for _ in range(count):
        cases = plan.cases_of(draw.randrange(1_000_000))
        picked.append(cases[draw.randrange(len(cases))])
    return picked


def correctness_rows(run_dir: Path) -> dict:
    """What must not depend on the engine: each correctness file's rows without ``_s``
    columns (None: the file is missing), and the verdict. The case's own folder, named in
    some columns (the schedule file), reads ``<case>``: the engines' folders differ."""
    found = {}
    here = str(run_dir.parent)
    for name in CORRECTNESS_FILES:
        try:
            with open(run_dir / name, newline="") as f:
                found[name] = [{k: v.replace(here, "<case>") for k, v in r.items() if not k.endswith("_s")}
                               for r in csv.DictReader(f)]
        except OSError:
            found[name] = None
    try:
        found["verdict"] = json.loads((run_dir / "verdict.json").read_text()).get("verdict")
    except (OSError, ValueError):
        found["verdict"] = None
    return found


def first_difference(sim: dict, real: dict) -> str:
    """Where two cases' rows first differ, in words ("" when identical)."""
    for name in [*CORRECTNESS_FILES, "verdict"]:
        a, b = sim.get(name), real.get(name)
        if a == b:
            continue
        if not isinstance(a, list) or not isinstance(b, list):
            return f"{name}: simulated {a!r:.80}, MPI {b!r:.80}"
        for i, (ra, rb) in enumerate(zip(a, b)):
            if ra != rb:
                keys = [k for k in dict.fromkeys([*ra, *rb]) if ra.get(k) != rb.get(k)]
                k = keys[0]
                return f"{name} row {i + 1} {k}: simulated {ra.get(k)!r:.80}, MPI {rb.get(k)!r:.80}"
        return f"{name}: {len(a)} rows simulated, {len(b)} on MPI"
    return ""


@dataclass
class TwinResult:
    case: Case
    sim: Outcome
    mpi: Outcome | None
    difference: str

    def row(self) -> dict:
        c = self.case
        return {"case": c.case_id, "workers": c.workers, "strategy": c.strategy, "recovery": c.recovery,
                "scenario": c.schedule.name, "sim_outcome": self.sim.outcome,
                "mpi_outcome": self.mpi.outcome if self.mpi else "", "same": int(not self.difference),
                "difference": self.difference, "sim_replay": self.sim.replay,
                "mpi_replay": self.mpi.replay if self.mpi else ""}


def run_sim(case: Case, folder: Path, choices: dict) -> tuple[Outcome, dict]:
    """``case`` simulated in ``folder`` with ``auto``'s record starting from ``choices``;
    (its outcome, the record as the job left it)."""
    schedule_path = write_case(case, folder)
    out_dir = folder / "run"
    config, _ = config_of(case.run_args(schedule_path, out_dir))
    settings = SimSettings(auto_choices=tuple(sorted(choices.items())))
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status, result = simulate_run(config, str(out_dir), case.workers, settings, quiet=True)
    job = JobResult(None if result.deadlocked else status, result.virtual_s, 180.0,
                    stdout.getvalue()[-TAIL_CHARS:], stderr.getvalue()[-TAIL_CHARS:])
    return judge(case, out_dir, job, sim_replay(case, folder)), dict(result.auto_choices)


def auto_record(out: Path) -> Path:
    return out / "auto-choices.json"


def learn_choices(cases, out: Path) -> dict:
    """The ``auto`` record both engines read: what the simulated ``auto`` cases choose."""
    choices: dict = {}
    for case in cases:
        if getattr(lookup(case.strategy).cls, "records_choices", False):
            _, record = run_sim(case, out / "learn" / case.case_id, choices)
            choices.update(record)
    path = auto_record(out)
    path.write_text(json.dumps({"schema": 1, "choices": dict(sorted(choices.items()))}, indent=1) + "\n")
    return choices


def batches(cases, size: int) -> list[Batch]:
    by_size: dict[int, list[Case]] = {}
    for case in cases:
        by_size.setdefault(case.workers, []).append(case)
    found = []
    for workers, group in sorted(by_size.items()):
        for i in range(0, len(group), size):
            found.append(Batch(f"twin-n{workers}-{i // size:04d}", workers, tuple(group[i:i + size])))
    return found


def with_record(mpiexec: list[str], record: Path) -> list[str]:
    """The launcher with the twin's own ``auto`` record given to every rank, in the command
    itself (``env MPIBENCH_AUTO_CHOICES=...``; Open MPI's ``-x`` passes it on), so a printed
    replay reads the same record."""
    name = Path(mpiexec[0]).name if mpiexec else ""
    passed = ["-x", "MPIBENCH_AUTO_CHOICES"] if name in ("mpirun", "mpiexec", "prterun") else []
    return ["/usr/bin/env", f"MPIBENCH_AUTO_CHOICES={record.absolute()}", *mpiexec, *passed]


def compare_case(case: Case, out: Path, mpi: Outcome | None, choices: dict) -> TwinResult:
    sim_out, _ = run_sim(case, case_folder(out / "sim", case), choices)
    sim_rows = correctness_rows(case_folder(out / "sim", case) / "run")
    if mpi is None:
        return TwinResult(case, sim_out, None, "not run on MPI (its batch did not reach it)")
    mpi_rows = correctness_rows(case_folder(out / "mpi", case) / "run")
    difference = first_difference(sim_rows, mpi_rows)
    if not difference and sim_out.outcome != mpi.outcome:
        difference = f"outcome: simulated {sim_out.outcome}, MPI {mpi.outcome}"
    return TwinResult(case, sim_out, mpi, difference)


def recorded_mpi(case: Case, out: Path, launcher: list[str], deadline_s: float) -> Outcome | None:
    """The MPI outcome an earlier run of the matrix left in ``out`` (None: that case never finished)."""
    run_dir = case_folder(out / "mpi", case) / "run"
    if not (run_dir / STATUS_FILE).exists():
        return None
    job = batch_case_job(run_dir, JobResult(0, 0.0, deadline_s, "", ""), last=False)
    return judge(case, run_dir, job, replay_command(launcher, case, run_dir.parent), in_batch=True)


def run_twin(cases, out: Path, mpiexec: list[str], batch_size: int = 12, deadline_s: float = 180.0,
             stream=None, reuse_mpi: bool = False) -> list[TwinResult]:
    """Every case on both engines; one :class:`TwinResult` each, also written to ``twin.csv``.
    ``reuse_mpi``: compare with the real jobs an earlier run left in ``out`` (and read the
    ``auto`` record they read), launching nothing: the simulated side alone is run again."""
    from mpibench.base.records import CsvLog

    from .process import install

    install()
    cases = list(cases)
    for engine in ("sim",) if reuse_mpi else ("sim", "mpi", "learn"):  # an earlier matrix: replaced, never mixed in
        shutil.rmtree(out / engine, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    choices = read_record(str(auto_record(out))) if reuse_mpi else learn_choices(cases, out)
    launcher = with_record(mpiexec, auto_record(out))
    table = CsvLog(str(out / "twin.csv"), COLUMNS)
    results = []
    for batch in batches(cases, batch_size):
        if reuse_mpi:
            by_id = {c.case_id: recorded_mpi(c, out, launcher, deadline_s) for c in batch.cases}
        else:
            by_id = {o.case.case_id: o for o in run_batch(batch, out / "mpi", launcher, deadline_s)[0]}
        for case in batch.cases:
            result = compare_case(case, out, by_id.get(case.case_id), choices)
            results.append(result)
            table.write(result.row())
            if result.difference and stream is not None:
                stream.write(f"twin: {case.case_id}: {result.difference}\n  simulated: {result.sim.replay}\n"
                             f"  MPI: {result.mpi.replay if result.mpi else '-'}\n")
        if stream is not None:
            same = sum(1 for r in results if not r.difference)
            stream.write(f"twin: {len(results)}/{len(cases)} cases, {same} identical\n")
            stream.flush()
    table.close()
    return results
