"""The self-test: known-bad reductions are caught, equal batches hide the weighting ones."""
import io
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import mpibench
from mpirun import mpirun_command, run_cli
from mpibench.drive.cases import CRASH, NO_VERDICT, OK, VIOLATION, Outcome
from mpibench.engine.data import shard_sizes
from mpibench.drive.launch import JobResult
from mpibench.selftest.variants.build import MUTANTS
from mpibench.selftest.drive import (NO_CONTROL, equal_batches, folder, run_selftest, strategy_summary,
                                     strategy_trials, strategy_verdict, trials, verdict)
from mpibench.sync import STRATEGIES

REQUIRED = {"unweighted", "numerator-only", "offset-blind", "bounds-only", "variance-within",
            "dead-leak", "stale-rejoin", "double-apply", "resume-epoch-start", "shard-swap", "drop-tail",
            "no-reshuffle", "keep-aborted", "minority-commit", "skip-member",
            "copy-lies", "late-copy-lies", "steps-csv-lies"}  # a lie in a copy of the claims, in steps.csv


def test_every_required_mutant_is_tried_and_none_is_a_production_strategy():
    assert REQUIRED <= set(MUTANTS)
    assert not set(MUTANTS) & set(STRATEGIES)
    tried = {t.mutant for t in trials() if t.group == "mutant"}
    assert REQUIRED <= tried
    assert {t.mutant for t in trials() if t.group == "equal"} == {"unweighted", "numerator-only"}


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 8))
def test_equal_batches_makes_every_shard_whole_batches(seed, workers):
    samples, batch = equal_batches(seed, workers)
    assert all(size % batch == 0 for size in shard_sizes(seed, samples, workers))


def outcome(kind, first="", checks=36):
    return Outcome(trials()[0].case(), kind, 6, checks, int(kind == VIOLATION), first,
                   first.split()[1] if first else None, "replay", JobResult(0, 1.0, 60, "", "boom"))


@pytest.mark.parametrize("expect,result,good,needle", [
    (True, outcome(VIOLATION, "1 equivalence"), True, "caught by equivalence at step 1"),
    (True, outcome(VIOLATION, "1 data"), False, "but not by equivalence, which must catch it"),  # its record's
    (True, outcome(OK), False, "NOT caught"),
    (False, outcome(OK), True, "0 violations in 36 checks"),
    (False, outcome(VIOLATION, "2 replicas"), False, "must not be"),
    (True, outcome(CRASH, "job exited 139"), False, "job failed"),
    (False, outcome(NO_VERDICT, "no verdict: no run.json"), False, "job failed"),
])
def test_verdicts(expect, result, good, needle):
    trial = next(t for t in trials() if t.expect_caught == expect)
    ok, text = verdict(trial, result)
    assert ok is good and needle in text


def test_variants_come_only_through_the_public_run_parts_hook():
    job = run_cli(["run", "--run-parts", "mpibench.selftest.variants:no-such-mutant"], timeout=60)
    assert job.returncode == 2 and "unknown mutant" in job.stderr and "Traceback" not in job.text
    assert len(job.stderr.strip().splitlines()) == 1
    help_text = run_cli(["run", "--help"]).stdout
    assert "--mutant" not in help_text and "--run-parts" in help_text  # no hidden option; the hook is documented
    for spec in ("no-colon", "no.such.module:x", "mpibench.sync:x"):  # not a plugin: one line, exit 2
        job = run_cli(["run", "--engine", "sim", "--ranks", "2", "--run-parts", spec], timeout=60)
        assert job.returncode == 2 and "--run-parts" in job.stderr and "Traceback" not in job.text, spec


def test_production_code_names_no_variant():
    """The self-test lives in mpibench/selftest/ alone: no production module mentions a mutant."""
    package = Path(mpibench.__file__).parent
    outside = [str(p.relative_to(package)) for p in sorted(package.rglob("*.py"))
               if "selftest" not in p.relative_to(package).parts and "mutant" in p.read_text().lower()]
    assert outside == []
    assert (package / "selftest" / "variants" / "catalogue.py").exists()  # the walk saw the package


def test_trial_folders_hold_no_colon_and_are_unique():
    plan = trials() + strategy_trials("some_pkg.plugin:MyStrategy")
    names = [folder(Path("/out"), t).name for t in plan]
    assert all(":" not in n and "/" not in n for n in names)
    assert len(set(names)) == len(names)
    assert folder(Path("/out"), strategy_trials("pkg.mod:Cls")[0]).name == "pkg.mod.Cls_no-faults"


@pytest.mark.mpi
def test_selftest_catches_and_the_equal_batch_control_does_not(tmp_path):
    stream = io.StringIO()
    only = {"unweighted", "offset-blind", "variance-within", "no-reshuffle", "unweighted/equal", "honest/native"}
    code = run_selftest(tmp_path, mpirun_command(), jobs=2, stream=stream, only=only)
    text = stream.getvalue()
    assert code == 0, text
    assert "unweighted                   caught by equivalence at step 1" in text
    assert "unweighted/equal             not distinguishable" in text
    assert "no-reshuffle                 caught by data at step 2" in text
    assert "selftest passed: 4 of 4 known-bad reductions caught" in text


OVERLAPPED = ("early-bucket", "bucket-twice", "bucket-offsets")  # planted in run --overlap's buckets


def test_the_overlapped_variants_run_overlapped_beside_an_honest_overlapped_control():
    plan = {t.label: t for t in trials()}
    assert {name for name, m in MUTANTS.items() if m.overlap} == set(OVERLAPPED)
    for name in OVERLAPPED + ("honest/overlap",):
        assert "--overlap" in plan[name].case().extra and plan[name].strategy == "native", name
    assert not any("--overlap" in t.options for t in trials() if t.mutant not in OVERLAPPED + (None,))
    assert "--overlap" not in plan["honest/native"].case().extra


@pytest.mark.mpi
def test_selftest_catches_the_overlapped_variants_on_mpi(tmp_path):
    stream = io.StringIO()
    code = run_selftest(tmp_path, mpirun_command(), jobs=2, stream=stream, only={*OVERLAPPED, "honest/overlap"})
    text = stream.getvalue()
    assert code == 0, text
    assert "early-bucket                 caught by equivalence, replicas at step 0" in text
    assert "bucket-twice                 caught by equivalence, accounting at step 0" in text
    assert "honest/overlap               all invariants held" in text
    assert "selftest passed: 3 of 3 known-bad reductions caught" in text


def test_a_strategy_runs_each_distinct_planted_fault_once_and_the_late_worker_is_dropped():
    plan = strategy_trials("ring")
    keys = [(t.events, t.recovery, t.options) for t in plan]
    assert len(keys) == len(set(keys)) == 8  # no faults + seven distinct schedules
    assert len({t.label for t in plan}) == len(plan)
    from mpibench.selftest.variants.hsdp import HSDP_MIXINS

    schedules = {e for t in trials() if t.group == "mutant" and t.mutant not in NO_CONTROL
                 and t.mutant not in HSDP_MIXINS  # hsdp's replica handover: its own hsdp control
                 for e in [(t.events, t.recovery, t.options)] if t.events}
    # every schedule a mutant is planted under, none other (but those whose honest run is refused,
    # and hsdp's handover schedule, which only a strategy holding replicated optimiser state has)
    assert {k for k in keys if k[0]} == schedules
    late = [t for t in plan if any(type(e).__name__ == "Delay" for e in t.events)]
    assert len(late) == 1 and late[0].label == "ring/late-worker-dropped"
    deadline = float(late[0].options[late[0].options.index("--straggler-deadline") + 1])
    assert all(e.seconds > deadline for e in late[0].events)  # late beyond the deadline: dropped


def test_a_strategy_report_names_what_it_survived_and_what_failed_where(tmp_path):
    plan = strategy_trials("ring")
    csv = tmp_path / "invariants.csv"
    csv.write_text("scenario,strategy,recovery,step,invariant,passed,detail\n"
                   "s,ring,shrink,0,equivalence,true,fine\n"
                   "s,ring,shrink,0,replicas,false,parameters differ after the commit: ab: 1; cd: 0\n")
    bad = Outcome(plan[1].case(), VIOLATION, 6, 40, 1, "0 replicas", "replicas", "mpirun -n 3 x run --out r",
                  JobResult(1, 1.0, 60, "", ""))
    ok, text = strategy_verdict(plan[1], bad, csv)
    assert not ok and "must not be" not in text
    assert text == ("FAILED: replicas at step 0: parameters differ after the commit: ab: 1; cd: 0\n"
                    "      replay: mpirun -n 3 x run --out r")
    good = outcome(OK, checks=42)
    assert strategy_verdict(plan[0], good) == (True, "survived: every invariant held (42 checks)")
    line = strategy_summary("ring", plan[:2], [good, bad])
    assert line == "ring survived 1 of 2 planted faults; failed: kill-mid-reduction (replicas at step 0)"
