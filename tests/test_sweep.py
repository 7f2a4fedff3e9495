"""The sweep driver: plan, findings that are never dropped, exact replay, shrinking."""
import os
import shlex
import signal
import stat
import subprocess
import sys
import time

import pandas as pd
import pytest

from mpirun import mpirun_command, run_command
from mpibench.drive.cases import CRASH, HANG, NO_VERDICT, OK, VIOLATION, judge
from mpibench.drive import launch as launch_module
from mpibench.drive.launch import JobResult, run_job_again_if_unstarted
from mpibench.base.records import SWEEP_COLUMNS
from mpibench.drive.sweep import SweepPlan, SweepSettings, run_sweep, summary_text


def test_plan_is_seed_major_deterministic_and_alternates_recovery():
    plan = SweepPlan(seeds=4, workers=(2, 5), strategies=("ring", "ps"), steps=6, first_seed=10)
    cases = plan.cases()
    assert len(cases) == 4 * 2 * 2 and len({c.case_id for c in cases}) == len(cases)
    assert [c.case_id for c in cases] == [c.case_id for c in plan.cases()]
    assert [c.schedule for c in cases] == [c.schedule for c in plan.cases()]
    assert {c.recovery for c in cases if c.seed % 2} == {"respawn"}
    assert {c.recovery for c in cases if c.seed % 2 == 0} == {"shrink"}
    ring, ps = (c for c in cases if c.seed == 10 and c.workers == 5)
    assert ring.schedule == ps.schedule  # identical schedules under both strategies


def fake_launcher(tmp_path, body: str) -> list[str]:
    script = tmp_path / "fake-mpiexec"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return [str(script)]


@pytest.mark.parametrize("body,outcome,needle", [
    ("echo 'rank 1 fell over: segfault' >&2; exit 139", CRASH, "exit 139, twice"),
    ("echo 'waiting forever' >&2; exec sleep 30", HANG, "hung"),
])
def test_broken_jobs_are_findings_with_their_stderr(tmp_path, body, outcome, needle, monkeypatch):
    monkeypatch.setattr(launch_module, "LAUNCH_RETRY_PAUSES_S", (0.0, 0.0))  # a stand-in: no pause helps it
    settings = SweepSettings(tmp_path / "out", fake_launcher(tmp_path, body), jobs=2, case_deadline_s=2)
    outcomes = run_sweep(SweepPlan(2, (2, 3), ("ring",), 4).cases(), settings, stream=open(os.devnull, "w"))
    assert [o.outcome for o in outcomes] == [outcome] * 4
    sweep = pd.read_csv(tmp_path / "out" / "sweep.csv", keep_default_na=False)
    assert list(sweep.columns[:len(SWEEP_COLUMNS)]) == SWEEP_COLUMNS
    assert len(sweep) == 4 and (sweep.outcome == outcome).all()
    assert sweep.first_violation.str.contains(needle).all()
    findings = pd.read_csv(tmp_path / "out" / "findings.csv", keep_default_na=False)
    assert len(findings) == 4 and findings.stderr_tail.str.contains(body.split("'")[1]).all()
    assert "4 cases" in summary_text(outcomes, 1.0)


@pytest.mark.mpi
@pytest.mark.parametrize("cases_per_launch", [1, 4])
def test_a_launcher_that_fails_before_starting_is_tried_again_not_blamed_on_the_case(tmp_path, cases_per_launch,
                                                                                     monkeypatch):
    """Every launch fails once before anything starts (as a launcher whose PMIx listener could
    not start does), then runs: each case is judged on the second launch, and ok."""
    monkeypatch.setattr(launch_module, "LAUNCH_RETRY_PAUSES_S", (0.0, 2.0))  # the stand-in's failure is at once
    real = shlex.join(mpirun_command())
    seen = tmp_path / "seen"
    seen.mkdir()
    launcher = fake_launcher(tmp_path, f'key=$(echo "$@" | md5sum | cut -c1-12)\n'
                                       f'if [ ! -e {seen}/$key ]; then touch {seen}/$key; '
                                       f"echo 'listener thread failed to start' >&2; exit 213; fi\n"
                                       f'exec {real} "$@"')
    settings = SweepSettings(tmp_path / "out", launcher, jobs=1, case_deadline_s=120,
                             cases_per_launch=cases_per_launch)
    outcomes = run_sweep(SweepPlan(1, (2,), ("ring", "ps"), 3).cases(), settings, stream=open(os.devnull, "w"))
    assert [o.outcome for o in outcomes] == [OK, OK], [o.first_violation for o in outcomes]
    first_tries = list((tmp_path / "out").rglob("stderr.first-launch.txt"))
    assert len(first_tries) == len(list(seen.iterdir())) >= 1
    assert all("listener thread failed" in f.read_text() for f in first_tries)


def test_the_outcome_is_the_checkers_verdict_not_the_launchers_status(tmp_path):
    from history_builder import build, find

    case = SweepPlan(1, (2,), ("ring",), 4).cases()[0]
    honest, planted, empty = tmp_path / "honest", tmp_path / "planted", tmp_path / "empty"
    build(honest)
    build(planted, tamper=lambda files, info: find(files, 2, 3).update(params_after="0" * 32))
    empty.mkdir()
    assert judge(case, honest, JobResult(0, 0.1, 10, "", ""), "replay").outcome == OK
    assert judge(case, honest, JobResult(1, 0.1, 10, "", "Traceback ..."), "replay").outcome == CRASH
    # mpirun can exit 0 after a violation: the history still says so
    result = judge(case, planted, JobResult(0, 0.1, 10, "", ""), "replay")
    # (the diverged replica also breaks its own parameter chain at step 4: a 'contract' violation)
    assert (result.outcome, result.violations, result.first_violation) == (VIOLATION, 2, "3 replicas")
    # no history: never a pass, even when the launcher says 0
    result = judge(case, empty, JobResult(0, 0.1, 10, "", ""), "replay")
    assert result.outcome == NO_VERDICT and "no run.json" in result.first_violation
    assert (planted / "verdict.json").exists()


# ---------------------------------------------------------------------------- with MPI
def deterministic(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[[c for c in frame.columns if not c.endswith("_s")]]


# (workers, seed, strategy): kills at several phases, a partition that heals, both recoveries.
REPLAY_CASES = [(3, 25, "ring"), (4, 2, "ps"), (4, 13, "ring")]


@pytest.mark.mpi
def test_replay_command_reproduces_the_rows_exactly(tmp_path):
    cases = [c for w, seed, strategy in REPLAY_CASES
             for c in SweepPlan(1, (w,), (strategy,), 8, first_seed=seed).cases()]
    kinds = {e.kind for c in cases for e in c.schedule.events}
    assert {"kill", "partition", "delay"} <= kinds and {c.recovery for c in cases} == {"shrink", "respawn"}
    settings = SweepSettings(tmp_path, mpirun_command(), jobs=2, case_deadline_s=60)
    outcomes = run_sweep(cases, settings, stream=open(os.devnull, "w"))
    injected = {k for o in outcomes for k in o.faults_injected}
    assert {"kill", "respawn", "partition"} <= injected, injected
    # Rows first (they are written before the job ends), then how the jobs ended.
    for o in outcomes:
        folder = tmp_path / "cases" / o.case.case_id
        replay = run_job_again_if_unstarted(["env", *shlex.split(o.replay)], folder / "replay-log", 60,
                                                started=(folder / "replay").exists)
        for name in ("steps.csv", "invariants.csv", "faults.csv"):
            first = deterministic(pd.read_csv(folder / "run" / name, keep_default_na=False))
            again = deterministic(pd.read_csv(folder / "replay" / name, keep_default_na=False))
            assert len(first) and len(first) == len(again), f"{o.case.case_id} {name}: row count differs"
            differ = first.compare(again)
            assert differ.empty, f"{o.case.case_id} {name} differs on replay:\n{differ.to_string()[:1500]}"
        assert replay.returncode == 0, replay.stderr_tail[-2000:]
        row = judge(o.case, folder / "replay", o.job, o.replay).row()
        assert {k: v for k, v in row.items() if not k.endswith("_s")} == \
               {k: v for k, v in o.row().items() if not k.endswith("_s")}
    assert [o.outcome for o in outcomes] == [OK] * len(cases), summary_text(outcomes, 1)


@pytest.mark.mpi
def test_a_violation_is_shrunk_and_the_minimal_command_still_fails(tmp_path):
    cases = SweepPlan(1, (4,), ("ring",), 8, first_seed=24,
                      extra=("--run-parts", "mpibench.selftest.variants:unweighted", "--samples", "100")).cases()
    settings = SweepSettings(tmp_path, mpirun_command(), jobs=1, case_deadline_s=60, shrink_runs=6)
    log = tmp_path / "log.txt"
    with open(log, "w") as stream:
        (outcome,) = run_sweep(cases, settings, stream=stream)
    assert outcome.outcome == VIOLATION and outcome.first_invariant == "equivalence"
    assert outcome.minimal and outcome.minimal != outcome.replay
    text = log.read_text()
    assert f"original: {outcome.replay}" in text and f"minimal:  {outcome.minimal}" in text
    args = shlex.split(outcome.minimal)
    assert int(args[args.index("--steps") + 1]) < 8
    again = run_command(["env", *args], timeout=60)  # tried again if its launcher never started
    assert again.returncode == 1 and "equivalence" in again.stdout
    sweep = pd.read_csv(tmp_path / "sweep.csv", keep_default_na=False)
    assert sweep.minimal_replay[0] == outcome.minimal


def test_a_stopped_sweep_leaves_no_jobs_behind(tmp_path):
    marker = f"sleep 3{os.getpid() % 10}7"  # a command line nobody else runs
    launcher = fake_launcher(tmp_path, f"exec {marker}")[0]
    proc = subprocess.Popen([sys.executable, "-m", "mpibench", "sweep", "--seeds", "2", "--workers", "2",
                             "--strategies", "ring", "--jobs", "2", "--mpiexec", launcher,
                             "--out", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not running(marker):
        time.sleep(0.2)
    assert running(marker)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    time.sleep(0.5)
    assert not running(marker)


def running(command: str) -> bool:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return any(line.strip() == command for line in ps.splitlines())


@pytest.mark.parametrize("launch_started,needle", [(False, "launch failed (exit 213, twice) before this case"),
                                                   (True, "batch job ended (exit 213) during this case")])
def test_a_case_a_batch_never_reached_is_blamed_on_the_launch_only_if_nothing_began(tmp_path, launch_started,
                                                                                     needle):
    case = SweepPlan(1, (2,), ("ring",), 4).cases()[0]
    never_made = tmp_path / "cases" / case.case_id / "run"
    result = judge(case, never_made, JobResult(213, 0.1, 10, "", "listener failed"), "replay", in_batch=True,
                   launch_started=launch_started)
    assert result.outcome == CRASH and needle in result.first_violation


def pasted_env() -> dict:
    """A clean shell as a user would paste into: no virtual environment on the PATH and no
    Open MPI variables (root's permission must come from the command itself)."""
    return {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}


def paste(command: str, cwd, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", "-c", command], cwd=cwd, env=pasted_env(), capture_output=True,
                          text=True, timeout=timeout_s, stdin=subprocess.DEVNULL, start_new_session=True)


@pytest.mark.mpi
def test_every_printed_command_runs_as_pasted_from_anywhere(tmp_path, monkeypatch):
    from mpibench.drive.launch import launcher_argv

    # A relative --out and a launcher named bare, as a user would give them; two planted
    # violations in one batch, so that findings.csv and the batch's replay are printed too.
    monkeypatch.chdir(tmp_path)
    launcher = launcher_argv(shlex.join(["mpirun", *mpirun_command()[1:]]))
    cases = SweepPlan(1, (4,), ("ring", "ps"), 8, first_seed=24,
                      extra=("--run-parts", "mpibench.selftest.variants:unweighted", "--samples", "100")).cases()
    settings = SweepSettings("rel-out", launcher, jobs=1, case_deadline_s=60, shrink_runs=0, cases_per_launch=2)
    outcomes = run_sweep(cases, settings, stream=open(os.devnull, "w"))
    assert [o.outcome for o in outcomes] == [VIOLATION] * 2, summary_text(outcomes, 1)
    assert [o.alone for o in outcomes] == ["reproduced alone"] * 2  # each run again alone first
    sweep = pd.read_csv(tmp_path / "rel-out" / "sweep.csv", keep_default_na=False)
    findings = pd.read_csv(tmp_path / "rel-out" / "findings.csv", keep_default_na=False)
    assert list(findings.replay) == list(sweep.replay) and list(findings.alone) == list(sweep.alone)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = sweep.iloc[0]
    batch_again = paste(first.batch_replay, elsewhere)
    assert batch_again.returncode == 0, batch_again.stderr[-2000:]
    for row in sweep.itertuples():
        again = paste(row.replay, elsewhere)
        assert again.returncode == 1 and "equivalence" in again.stdout, again.stderr[-2000:]
        folder = tmp_path / "rel-out" / "cases" / row.case
        batch_replay = shlex.split(first.batch_replay)[-1].replace("replay-plan.json", f"replay/{row.case}/run")
        for name in ("steps.csv", "invariants.csv", "faults.csv"):
            recorded = deterministic(pd.read_csv(folder / "run" / name, keep_default_na=False))
            for pasted in (folder / "replay", batch_replay):
                rows = deterministic(pd.read_csv(os.path.join(pasted, name), keep_default_na=False))
                assert len(recorded) and recorded.compare(rows).empty, f"{row.case} {name} from {pasted}"
