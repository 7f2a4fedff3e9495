"""The self-test on the simulated engine: the same trials, judged by the same rules.

Every trial of :func:`mpibench.selftest.drive.trials` (the known-bad
reductions, the equal-batch controls that must *not* be caught, the honest
controls with and without faults) runs as a simulated case
(:func:`mpibench.sim.cases.run_case_sim`) and is judged by the real
self-test's :func:`~mpibench.selftest.drive.verdict`, so a catch reads the same
("caught by X at step s") on both engines and the steps can be compared.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from mpibench.selftest.drive import Trial, folder, trials, verdict
from mpibench.selftest.variants.catalogue import runs_on
from mpibench.sim.cases import run_case_sim
from mpibench.sim.jobs import SimSettings


@dataclass(frozen=True)
class TrialResult:
    trial: Trial
    ok: bool
    text: str  # "caught by X at step s", "all invariants held: ...", or what failed
    first_violation: str  # "STEP INVARIANT" or ""
    wall_s: float


def run_trial(trial: Trial, out: Path, settings: SimSettings = SimSettings()) -> TrialResult:
    where = folder(out, trial)
    shutil.rmtree(where, ignore_errors=True)
    outcome = run_case_sim(trial.case(), where, settings)
    ok, text = verdict(trial, outcome, where / "run" / "invariants.csv")
    return TrialResult(trial, ok, text, outcome.first_violation if outcome.outcome == "violation" else "",
                       outcome.job.wall_s)


def run_selftest_sim(out: Path, settings: SimSettings = SimSettings(), labels=None) -> list[TrialResult]:
    """Every trial (or those named in ``labels``), one line each on stdout."""
    results = []
    for trial in trials():
        if (labels is not None and trial.label not in labels) or not runs_on(trial.mutant, "sim"):
            continue
        result = run_trial(trial, out, settings)
        mark = "ok  " if result.ok else "FAIL"
        print(f"{mark} [simulated] {trial.label:<28} {result.text} ({result.wall_s:.2f} s)", flush=True)
        results.append(result)
    return results


def selftest_sim_command(out: Path, stream) -> int:
    """``selftest --engine sim``: every trial simulated in this process, one line each, judged by
    the same rules as on MPI; 0 only if each came out right."""
    start = time.perf_counter()
    plan = trials()
    stream.write(f"selftest [simulated]: {len(plan)} cases "
                 f"({sum(t.group == 'mutant' for t in plan)} known-bad reductions), one at a time\n")
    stream.flush()
    results = []
    for trial in plan:
        result = run_trial(trial, out)
        results.append(result)
        stream.write(f"  {'ok ' if result.ok else 'BAD'} {trial.label:<28} {result.text}  [{trial.strategy}]\n")
        stream.flush()
    caught = sum(1 for r in results if r.trial.group == "mutant" and r.first_violation)
    bad = sum(r.trial.group == "mutant" for r in results)
    good = all(r.ok for r in results)
    stream.write(f"selftest [simulated] {'passed' if good else 'FAILED'}: {caught} of {bad} known-bad "
                 f"reductions caught in {time.perf_counter() - start:.0f} s; cases in {out}\n")
    return 0 if good else 1
