"""The self-test: the checker must catch every known-bad reduction.

Each trial is one MPI job running ``run --run-parts mpibench.selftest.variants:NAME``
(the public run-parts hook; see :mod:`mpibench.selftest.variants.build`) on small, uneven
shards so that epochs end on short batches within the first steps. A mutant passes the
self-test only if some invariant fails ("caught by X at step s"); the self-test exits 0 only
if every mutant is caught and every control behaves.

Controls keep the catches honest:

* the same settings with the honest strategy must hold every invariant, so a
  catch is the mutant's doing and not a broken setup;
* the weighting mutants rerun with **equal** batch sizes and no faults, and there they must
  *not* be caught: with every batch the same size, the plain mean of means and the
  count-weighted mean are the same number, which is why the suite's shards are uneven. Equal
  batches come from choosing the data set size so that every shard is a whole number of
  batches (:func:`equal_batches`): then no epoch ever ends on a short batch.
"""
from __future__ import annotations

import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from mpibench.drive.cases import OK, VIOLATION, Case, Outcome, read_rows, run_case, stderr_gist
from mpibench.drive.launch import kill_all
from mpibench.drive.tee import summary_stream
from mpibench.base.exits import EXIT_COULD_NOT_RUN
from mpibench.selftest.variants import hook
from mpibench.selftest.variants.catalogue import MUTANTS, runs_on

UNEVEN_SAMPLES, UNEVEN_BATCH = 100, 16
# Mutants that live in the ring: they and their honest controls run under it.
RING_MUTANTS = {"offset-blind": "ring", "bounds-only": "ring", "dead-leak": "ring",
                # the sharding defects, planted in zero-ring (mpibench.selftest.variants.sharded)
                "shard-offset": "zero-ring", "owner-steps-twice": "zero-ring", "stale-gather": "zero-ring",
                "state-lost-on-respawn": "zero-ring",
                # the hybrid sharding defects, planted in hsdp (mpibench.selftest.variants.hsdp)
                "replica-stale-gather": "hsdp", "replica-swap-skipped": "hsdp", "handover-claims-all": "hsdp",
                "hsdp-state-lost-on-respawn": "hsdp"}
ALSO_IN_HSDP = ("shard-offset", "owner-steps-twice")  # zero-ring's sharding mutants, also tried in hsdp
STEPS = 6
WORKERS = 3  # every trial's world size: the launcher must start this many ranks


@dataclass(frozen=True)
class Trial:
    label: str
    mutant: str | None  # None: the honest strategy
    strategy: str
    workers: int
    expect_caught: bool
    events: tuple = ()
    recovery: str = "shrink"
    samples: int = UNEVEN_SAMPLES
    batch_size: int = UNEVEN_BATCH
    group: str = "mutant"  # mutant | equal | control
    check_every: int = 1
    options: tuple = ()  # further run options the schedule needs (a straggler deadline)

    def case(self) -> Case:
        from mpibench.faults import Schedule

        extra = ["--samples", str(self.samples), "--batch-size", str(self.batch_size), *self.options]
        if self.check_every != 1:
            extra += ["--check-every", str(self.check_every)]
        if self.mutant:
            extra += ["--run-parts", hook(self.mutant)]
        schedule = Schedule(f"selftest-{self.label}", self.workers, tuple(self.events))
        return Case(self.label, 0, self.workers, self.strategy, self.recovery, STEPS, schedule, tuple(extra))


def equal_batches(seed: int, workers: int, min_batch: int = 4, max_batch: int = 16) -> tuple[int, int]:
    """``(samples, batch_size)`` for which every shard is a whole number of batches."""
    from mpibench.engine.data import shard_sizes

    for samples in range(workers * min_batch, 4096):
        g = math.gcd(*shard_sizes(seed, samples, workers))
        for batch in range(min(g, max_batch), min_batch - 1, -1):
            if g % batch == 0:
                return samples, batch
    return workers, 1  # one sample per batch is always equal


def fault_events():
    """The schedules the recovery mutants need."""
    from mpibench.faults import Delay, Kill, Partition

    return {
        "dead-leak": (Kill(2, 1, "mid_reduction", 2),),
        "stale-rejoin": (Partition(((0, 1), (2,)), 1, 3),),
        "stale-rejoin/respawn": (Kill(2, 1, "before_compute"),),
        "double-apply": (Kill(2, 1, "after_apply"),),
        "resume-epoch-start/respawn": (Kill(2, 3, "before_compute"),),
        "shard-swap": (Kill(1, 2, "before_compute"),),
        "keep-aborted": (Kill(2, 1, "after_apply"),),
        "minority-commit": (Partition(((0, 1), (2,)), 1, 3),),
        "stall-claims-batch": (Partition(((0, 1), (2,)), 1, 3),),
        "late-keeps-batch": (Delay(2, (1, 2), 0.6, "compute"),),
        "late-copy-lies": (Delay(2, (1, 2), 0.6, "compute"),),
        "abort-advances": (Kill(2, 1, "after_apply"),),
        "state-lost-on-respawn": (Kill(2, 2, "before_compute"),),
        "hsdp-state-lost-on-respawn": (Kill(2, 2, "before_compute"),),
    }


# Mutants whose schedule lives under another label, and the run options they need.
FAULTS_OF = {"resume-epoch-start": "resume-epoch-start/respawn", "handover-claims-all": "hsdp-state-lost-on-respawn"}
# step3-lr plants its wrong update on a step the online check skips: the verdict of record must not.
CHECK_EVERY = {"keep-aborted": 2, "step3-lr": 4}
OPTIONS = {"late-keeps-batch": ("--straggler-deadline", "0.15"), "late-copy-lies": ("--straggler-deadline", "0.15"),
           "state-lost-on-respawn": ("--momentum", "0.9"), "hsdp-state-lost-on-respawn": ("--momentum", "0.9"),
           "handover-claims-all": ("--momentum", "0.9")}
# Mutants without an honest control of their schedule: the honest run is refused (exit 2),
# which is what the mutant shows the need for (tests/test_optimizer_refusal.py checks it).
NO_CONTROL = ("state-lost-on-respawn",)


def trials() -> list[Trial]:
    faults = fault_events()
    plan = []
    for name, mutant in MUTANTS.items():
        label = FAULTS_OF.get(name, name)
        recovery = "respawn" if label.endswith("respawn") else "shrink"
        options = OPTIONS.get(name, MUTANTS[name].options) + (("--overlap",) if MUTANTS[name].overlap else ())
        plan.append(Trial(name, name, RING_MUTANTS.get(name, "native"), WORKERS, True, faults.get(label, ()),
                          recovery, check_every=CHECK_EVERY.get(name, 1), options=options))
    plan += [Trial(f"{name}/hsdp", name, "hsdp", WORKERS, True) for name in ALSO_IN_HSDP]
    plan.append(Trial("stale-rejoin/respawn", "stale-rejoin", "native", WORKERS, True,
                      faults["stale-rejoin/respawn"], "respawn"))
    samples, batch = equal_batches(0, WORKERS)
    for name, mutant in MUTANTS.items():
        if mutant.weighting:
            plan.append(Trial(f"{name}/equal", name, "native", WORKERS, False, samples=samples,
                              batch_size=batch, group="equal"))
    plan += [Trial(f"honest/{label}", None, strategy, WORKERS, False, group="control", **kw) for label, strategy, kw in
             (("native", "native", {}), ("ring", "ring", {}), ("check-every-4", "native", {"check_every": 4}),
              ("overlap", "native", {"options": ("--overlap",)}))]  # the overlapped sync, honest
    for options in sorted({m.options for m in MUTANTS.values() if m.options}):  # honest, as the optimizer defects
        plan.append(Trial(f"honest/{options[1]}", None, "native", WORKERS, False, group="control", options=options))
    seen = set()
    for name, events in faults.items():
        if name in NO_CONTROL:
            continue
        recovery = "respawn" if name.endswith("respawn") else "shrink"
        key = (events, recovery, CHECK_EVERY.get(name, 1), OPTIONS.get(name, ()), RING_MUTANTS.get(name))
        if key in seen:  # one honest run per distinct strategy, schedule and options
            continue
        seen.add(key)
        plan.append(Trial(f"honest/{name}", None, RING_MUTANTS.get(name, "native"), WORKERS, False, events, recovery,
                          group="control", check_every=CHECK_EVERY.get(name, 1), options=OPTIONS.get(name, ())))
    return plan


def failing_at(invariants_csv: Path, step: str) -> list[str]:
    """Every invariant that failed at ``step`` in a run's invariants.csv, in check order."""
    return [r["invariant"] for r in read_rows(invariants_csv) if r["step"] == step and r["passed"] != "true"]


def verdict(trial: Trial, outcome: Outcome, invariants_csv: Path | None = None) -> tuple[bool, str]:
    """Whether the trial came out as it must, and the line that says how."""
    if outcome.outcome == VIOLATION:
        step, invariant = outcome.first_violation.split(maxsplit=1)
        names = (failing_at(invariants_csv, step) if invariants_csv else []) or [invariant]
        text = f"caught by {', '.join(names)} at step {step}"
        if trial.expect_caught and (must := MUTANTS[trial.mutant].caught_by) not in names:  # its record's invariant
            return False, f"{text} -- but not by {must}, which must catch it"
        return trial.expect_caught, text if trial.expect_caught else f"{text} -- but it must not be"
    if outcome.outcome == OK:
        held = "not distinguishable" if trial.group == "equal" else "all invariants held"
        text = f"{held}: 0 violations in {outcome.checks} checks"
        return (not trial.expect_caught, text if not trial.expect_caught else f"NOT caught ({outcome.checks} checks)")
    return False, f"job failed ({outcome.first_violation}): {stderr_gist(outcome.job.stderr_tail)}"


# A folder name holds neither the label's '/' nor a plugin strategy's package.module:Class colon
# (it breaks PATH-like lists, scp, Windows copies); the labels of one self-test share their
# strategy prefix and differ in parts without either, so the folders differ as the labels do.
FOLDER_SAFE = str.maketrans({"/": "_", ":": "."})


def folder(out: Path, trial: Trial) -> Path:
    return out / trial.label.translate(FOLDER_SAFE)


def launched(out: Path, trial: Trial) -> bool:
    """Whether the trial's job got as far as starting the run (run.json is its first write)."""
    return (folder(out, trial) / "run" / "run.json").exists()


def fresh_trial(trial: Trial, out: Path, mpiexec: list[str], deadline_s: float):
    """Run one trial in an emptied folder: the folders under the self-test's --out are scratch."""
    import shutil

    shutil.rmtree(folder(out, trial), ignore_errors=True)
    return run_case(trial.case(), folder(out, trial), mpiexec, deadline_s)


# The distinct fault schedules the recovery mutants use, each named for what it plants. Several
# mutants share a schedule (a partition, a kill after apply); a strategy runs each schedule once.
STRATEGY_FAULTS = {"dead-leak": "kill-mid-reduction", "stale-rejoin": "partition-heal",
                   "stale-rejoin/respawn": "kill-then-respawn", "double-apply": "kill-after-apply",
                   "resume-epoch-start/respawn": "kill-respawn-mid-epoch", "shard-swap": "kill-before-compute",
                   "late-keeps-batch": "late-worker-dropped"}


def strategy_trials(strategy: str) -> list[Trial]:
    """A strategy under test: honest runs on uneven shards, with no faults and with each
    distinct fault schedule of the recovery mutants (the late worker under a straggler
    deadline, so it is dropped); each must hold every invariant."""
    plan = [Trial(f"{strategy}/no-faults", None, strategy, WORKERS, False, group="control")]
    seen = set()
    for name, events in fault_events().items():
        if name not in STRATEGY_FAULTS:  # a schedule only its own strategy can run (with --momentum)
            continue
        recovery = "respawn" if name.endswith("respawn") else "shrink"
        key = (events, recovery, OPTIONS.get(name, ()))
        if key in seen:
            continue
        seen.add(key)
        plan.append(Trial(f"{strategy}/{STRATEGY_FAULTS[name]}", None, strategy, WORKERS, False, events, recovery,
                          group="control", options=OPTIONS.get(name, ())))
    return plan


def strategy_verdict(trial: Trial, outcome: Outcome, invariants_csv: Path | None = None) -> tuple[bool, str]:
    """What a strategy did with one planted fault: survived it, or which invariant failed at
    which step (with what the checker saw, and the command that replays the run)."""
    if outcome.outcome == OK:
        return True, f"survived: every invariant held ({outcome.checks} checks)"
    if outcome.outcome != VIOLATION:
        return verdict(trial, outcome, invariants_csv)
    step, invariant = outcome.first_violation.split(maxsplit=1)
    rows = [r for r in read_rows(invariants_csv) if r["step"] == step and r["passed"] != "true"] if invariants_csv else []
    names = ", ".join(r["invariant"] for r in rows) or invariant
    detail = rows[0]["detail"] if rows else ""
    detail = detail if len(detail) <= 160 else detail[:157] + "..."
    return False, f"FAILED: {names} at step {step}{': ' + detail if detail else ''}\n      replay: {outcome.replay}"


def strategy_summary(strategy: str, plan: list, outcomes: list) -> str:
    """The strategy's line: which planted faults it survived and which it did not."""
    survived = [t.label.split("/", 1)[1] for t, o in zip(plan, outcomes) if o.outcome == OK]
    failed = [f"{t.label.split('/', 1)[1]} ({o.first_violation.split(maxsplit=1)[1]} at step "
              f"{o.first_violation.split()[0]})" if o.outcome == VIOLATION else f"{t.label.split('/', 1)[1]} (job failed)"
              for t, o in zip(plan, outcomes) if o.outcome != OK]
    text = f"{strategy} survived {len(survived)} of {len(plan)} planted faults"
    return text + (f"; failed: {', '.join(failed)}" if failed else "")


def run_selftest(out: Path, mpiexec: list[str], jobs: int = 2, deadline_s: float = 60.0,
                 stream=None, only: set[str] | None = None, strategy: str | None = None) -> int:
    """Run the trials (those labelled in ``only``, if given); 0 only if each came out right.
    With ``strategy``, the trials are :func:`strategy_trials` of that strategy instead."""
    stream = stream or sys.stdout
    plan = [t for t in (strategy_trials(strategy) if strategy else trials())
            if (only is None or t.label in only) and runs_on(t.mutant, "mpi")]
    samples, batch = equal_batches(0, WORKERS)
    start = time.perf_counter()
    what = (f" of {strategy}: {len(plan)} jobs, no faults then each planted fault once" if strategy
            else f": {len(plan)} jobs ({sum(t.group == 'mutant' for t in plan)} known-bad reductions)")
    stream.write(f"selftest{what}, {jobs} at a time; uneven shards: --samples {UNEVEN_SAMPLES} "
                 f"--batch-size {UNEVEN_BATCH}\n")
    stream.flush()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        try:
            outcomes = list(pool.map(lambda t: fresh_trial(t, out, mpiexec, deadline_s), plan))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            kill_all()
            raise
    not_started = [(t, o) for t, o in zip(plan, outcomes) if o.outcome != OK and not launched(out, t)]
    if not_started:
        hung = sum(o.job.hung for _, o in not_started)
        trial, outcome = not_started[0]
        gist = stderr_gist(outcome.job.stderr_tail)
        stream.write(f"selftest could not run: {len(not_started)} of {len(plan)} jobs never began their run "
                     f"({hung} still starting at the {deadline_s:g} s deadline, {len(not_started) - hung} exited "
                     f"first; first: {trial.label}, {outcome.first_violation}{': ' + gist if gist else ''}); "
                     f"no verdict on the checker. A busy machine starts jobs slowly: try --jobs 1. Jobs in {out}\n")
        return EXIT_COULD_NOT_RUN
    good = True
    titles = {"mutant": "known-bad reductions (uneven batches; recovery mutants with the kill shown):",
              "equal": f"weighting mutants with EQUAL batches, no faults (--samples {samples} "
                       f"--batch-size {batch}: every shard a whole number of batches):",
              "control": (f"{strategy} on uneven shards, each planted fault once (its schedule after the label):"
                          if strategy else "controls (honest reductions, same settings):")}
    for group, title in titles.items():
        if not any(t.group == group for t in plan):
            continue
        stream.write(title + "\n")
        for trial, outcome in zip(plan, outcomes):
            if trial.group != group:
                continue
            judged = strategy_verdict if strategy else verdict
            ok, text = judged(trial, outcome, folder(out, trial) / "run" / "invariants.csv")
            good &= ok
            faults = f"; {'; '.join(e.text() for e in trial.events)}, {trial.recovery}" if trial.events else ""
            head, _, replay = text.partition("\n")  # a failure's replay command on a line of its own
            stream.write(f"  {'ok ' if ok else 'BAD'} {trial.label:<28} {head}  [{trial.strategy}{faults}]\n"
                         + (replay + "\n" if replay else ""))
    caught = sum(1 for t, o in zip(plan, outcomes) if t.group == "mutant" and o.outcome == VIOLATION)
    mutants = sum(t.group == "mutant" for t in plan)
    what = strategy_summary(strategy, plan, outcomes) if strategy else f"{caught} of {mutants} known-bad reductions caught"
    stream.write(f"selftest {'passed' if good else 'FAILED'}: {what} "
                 f"in {time.perf_counter() - start:.0f} s; jobs in {out}\n")
    return 0 if good else 1
