"""Many cases per launch: the queue, what a dying batch leaves, and batch == single run."""
import json
import os
import shlex
import stat
import sys

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from mpirun import mpirun_command
from mpibench.drive.batching import BatchQueue, run_batch
from mpibench.base.records import STATUS_FILE
from mpibench.drive.cases import CRASH, HANG, OK
from mpibench.drive.launch import run_job_again_if_unstarted
from mpibench.drive.sweep import SweepPlan, SweepSettings, run_sweep


# ---------------------------------------------------------------------------- the queue
@settings(max_examples=40, deadline=None)
@given(seeds=st.integers(1, 6), workers=st.lists(st.integers(1, 8), min_size=1, max_size=3, unique=True),
       size=st.integers(1, 5), dead_at=st.integers(0, 6))
def test_queue_hands_out_every_case_once_by_worker_count(seeds, workers, size, dead_at):
    cases = SweepPlan(seeds, tuple(workers), ("ring", "ps"), 4).cases()
    queue = BatchQueue(cases, size)
    handed, first = [], True
    while (batch := queue.next()) is not None:
        assert 1 <= len(batch.cases) <= size
        assert {c.workers for c in batch.cases} == {batch.workers}
        if first and dead_at < len(batch.cases):  # the batch died in case dead_at: the rest come back first
            first = False
            handed += batch.cases[:dead_at + 1]
            rest = list(batch.cases[dead_at + 1:])
            queue.requeue(rest)
            if rest:
                again = queue.next()
                assert list(again.cases) == rest
                handed += again.cases
            continue
        handed += batch.cases
    assert sorted(c.case_id for c in handed) == sorted(c.case_id for c in cases)
    assert [queue.order[c.case_id] for c in cases] == list(range(len(cases)))


def test_an_endless_plan_stops_at_the_time_budget():
    plan = SweepPlan(None, (2, 3), ("ring",), 4, swarm=True)
    queue = BatchQueue(plan.stream(), 4, until=0.0)  # already spent
    assert queue.next() is None
    queue = BatchQueue(plan.stream(), 4)
    sizes = [len(queue.next().cases) for _ in range(5)]
    assert sizes == [4] * 5


# ---------------------------------------------------------------------------- a batch that dies
FAKE_MPIEXEC = r'''#!{python}
"""Stands in for mpirun: 'batch PLAN' runs the plan's cases until the poisoned one."""
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from history_builder import build
args = sys.argv[sys.argv.index("mpibench") + 1:]
poison, how = os.environ["FAKE_POISON"], os.environ["FAKE_HOW"]
def finish(out):  # an honest run folder: history the checker passes
    build(Path(out))
if args[0] == "run":  # a single case (a batch of one)
    finish(args[args.index("--out") + 1]); print("wall time 0.1 s"); sys.exit(0)
plan = json.load(open(args[1]))
for case in plan["cases"]:
    out = case["args"][case["args"].index("--out") + 1]
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, "run.json"), "w").write("{{}}")
    if case["case"] == poison:
        print("rank 2 fell over in " + poison, file=sys.stderr, flush=True)
        if how == "hang":
            time.sleep(60)
        sys.exit(139)
    finish(out)
    json.dump({{"exit_status": 0, "stuck": None, "wall_s": 0.01}}, open(os.path.join(out, "{status}"), "w"))
'''


@pytest.mark.parametrize("how,outcome,needle", [("crash", CRASH, "batch job ended (exit 139)"),
                                                ("hang", HANG, "hung")])
def test_a_batch_that_dies_loses_no_case(tmp_path, monkeypatch, how, outcome, needle):
    fake = tmp_path / "fake-mpiexec"
    fake.write_text(FAKE_MPIEXEC.format(python=sys.executable, status=STATUS_FILE,
                                         tests=os.path.dirname(os.path.abspath(__file__))))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    cases = SweepPlan(6, (3,), ("ring",), 4).cases()
    poison = cases[2].case_id
    monkeypatch.setenv("FAKE_POISON", poison)
    monkeypatch.setenv("FAKE_HOW", how)
    settings_ = SweepSettings(tmp_path / "out", [str(fake)], jobs=1, case_deadline_s=3, cases_per_launch=5)
    outcomes = run_sweep(cases, settings_, stream=open(os.devnull, "w"))
    assert [o.case.case_id for o in outcomes] == [c.case_id for c in cases]  # every case, plan order
    assert [o.outcome for o in outcomes] == [OK, OK, outcome, OK, OK, OK]
    dead = outcomes[2]
    assert needle in dead.first_violation and "fell over in " + poison in dead.job.stderr_tail
    replay = shlex.split(dead.replay)
    assert replay[replay.index("--out") + 1].endswith(f"{poison}/replay")  # replays alone, with `run`
    # run again alone (the fake's `run` passes): the finding is the batch's, with the batch's replay
    assert dead.alone == "batch only (alone: ok)", dead.alone
    assert "batch" in shlex.split(dead.batch_replay) and dead.batch_replay.endswith("replay-plan.json")
    launches = sorted(p.name for p in (tmp_path / "out" / "batches").iterdir())
    assert len(launches) == 2  # the first batch, then the two cases it had not reached; the 6th ran alone
    findings = pd.read_csv(tmp_path / "out" / "findings.csv", keep_default_na=False)
    assert list(findings.case) == [poison] and list(findings.alone) == [dead.alone]
    assert list(findings.batch_replay) == [dead.batch_replay]


def test_a_case_left_unfinished_by_an_earlier_sweep_is_not_taken_as_done(tmp_path, monkeypatch):
    fake = tmp_path / "fake-mpiexec"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    cases = SweepPlan(2, (3,), ("ring",), 4).cases()
    stale = tmp_path / "cases" / cases[0].case_id / "run"
    stale.mkdir(parents=True)
    (stale / STATUS_FILE).write_text(json.dumps({"exit_status": 0, "stuck": None, "wall_s": 0}))
    from mpibench.drive.batching import Batch

    outcomes, rest = run_batch(Batch("b", 3, tuple(cases)), tmp_path, [str(fake)], 5)
    assert [o.outcome for o in outcomes] == [CRASH] and rest == cases[1:]


# ---------------------------------------------------------------------------- with MPI
def deterministic(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[[c for c in frame.columns if not c.endswith("_s")]]


@pytest.mark.mpi
def test_batch_cases_give_the_rows_of_their_own_run_commands(tmp_path):
    # shrink after a kill and a partition, respawn after a kill mid-reduction, a swarm case with
    # two kills under respawn and small buckets: one launch restores the world between them.
    cases = [SweepPlan(1, (4,), ("ring",), 8, first_seed=2).cases()[0],
             SweepPlan(1, (4,), ("ps",), 8, first_seed=13).cases()[0],
             SweepPlan(1, (4,), ("ring", "ps", "native"), 8, first_seed=9, swarm=True).cases()[0]]
    assert [c.recovery for c in cases] == ["shrink", "respawn", "respawn"]
    settings_ = SweepSettings(tmp_path, mpirun_command(), jobs=1, case_deadline_s=120, cases_per_launch=3)
    outcomes = run_sweep(cases, settings_, stream=open(os.devnull, "w"))
    assert len(list((tmp_path / "batches").iterdir())) == 1  # one launch for all three
    injected = {k for o in outcomes for k in o.faults_injected}
    assert {"kill", "respawn", "partition"} <= injected, injected
    assert [o.outcome for o in outcomes] == [OK] * 3, [(o.case.case_id, o.first_violation) for o in outcomes]
    for o in outcomes:
        folder = tmp_path / "cases" / o.case.case_id
        assert (folder / "run" / "run.json").exists()
        replay = run_job_again_if_unstarted(["env", *shlex.split(o.replay)], folder / "replay-log", 120,
                                                started=(folder / "replay").exists)
        assert replay.returncode == 0, replay.stderr_tail[-2000:]
        for name in ("steps.csv", "invariants.csv", "faults.csv"):
            batch = deterministic(pd.read_csv(folder / "run" / name, keep_default_na=False))
            alone = deterministic(pd.read_csv(folder / "replay" / name, keep_default_na=False))
            assert len(batch) and len(batch) == len(alone), f"{o.case.case_id} {name}: row count differs"
            differ = batch.compare(alone)
            assert differ.empty, f"{o.case.case_id} {name} differs alone:\n{differ.to_string()[:1500]}"


@pytest.mark.mpi
def test_the_main_job_ends_with_a_sweep_whose_cases_replay(tmp_path):
    from mpirun import run_mpi

    mpirun = mpirun_command()
    mpirun = mpirun if "state_base_recoverable" in mpirun else mpirun + ["--prtemca", "state_base_recoverable", "1"]
    env = {"MPIBENCH_NO_BENCH": "1", "MPIBENCH_SCENARIOS": "none", "MPIBENCH_JOB_SWEEP_S": "20",
           "MPIBENCH_MPIEXEC": shlex.join(mpirun)}  # the launcher the replay commands name
    os.environ.update(env)
    try:
        job = run_mpi(3, ["--steps", "4"], tmp_path, timeout=300,
                      mpirun=mpirun + [a for k in env for a in ("-x", k)])
    finally:
        for k in env:
            del os.environ[k]
    sweep = pd.read_csv(tmp_path / "sweep.csv", keep_default_na=False)
    info = json.loads((tmp_path / "sweep.json").read_text())
    assert len(sweep) >= 1 and (sweep.workers == 3).all(), sweep
    assert set(sweep.outcome) <= {"ok", "violation"}, sweep  # no crash, no hang
    assert job.returncode == (0 if (sweep.outcome == "ok").all() else 1), job.text[-3000:]  # a finding fails the job
    assert info["cases"] == len(sweep) and info["swarm"] and "sweep of" in job.stdout
    # a planned case the budget never reached leaves no folder that looks like lost results
    assert sorted(p.name for p in (tmp_path / "sweep-cases").iterdir()) == sorted(sweep.case)
    first = sweep.iloc[0]
    folder = tmp_path / "sweep-cases" / first.case
    assert not (folder / "replay").exists()
    replay = run_job_again_if_unstarted(["env", *shlex.split(first.replay)], tmp_path / "replay-log", 120,
                                            started=(folder / "replay").exists)
    assert replay.returncode == 0, replay.stderr_tail[-2000:]
    for name in ("steps.csv", "invariants.csv", "faults.csv"):
        in_job = deterministic(pd.read_csv(folder / "run" / name, keep_default_na=False))
        alone = deterministic(pd.read_csv(folder / "replay" / name, keep_default_na=False))
        assert len(in_job) and in_job.compare(alone).empty, name


@pytest.mark.mpi
def test_a_batch_keeps_a_launched_process_alive_through_every_case(tmp_path):
    # s0-n3 (shrink) kills two workers: the restored world holds one launched process, at id 0,
    # and two spawned ones. s1-n3 (respawn) then kills workers 0 and 2 in one step: run as it
    # stood, only spawned processes would remain and ULFM would never report the deaths (the
    # default sweep hung there for its full deadline). The batch moves a launched process to id 1.
    plan = {c.case_id: c for c in SweepPlan(2, (3,), ("ring", "ps"), 16).cases()}
    cases = [plan["s0-n3-ring"], plan["s0-n3-ps"], plan["s1-n3-ring"]]
    settings_ = SweepSettings(tmp_path, mpirun_command(), jobs=1, case_deadline_s=60, cases_per_launch=3)
    outcomes = run_sweep(cases, settings_, stream=open(os.devnull, "w"))
    assert [o.outcome for o in outcomes] == [OK] * 3, [(o.case.case_id, o.first_violation) for o in outcomes]
    (batch,) = (tmp_path / "batches").iterdir()  # one launch, never ended early
    assert "a launched process takes worker id 1" in (batch / "stdout.txt").read_text()


def test_a_stopped_sweep_leaves_no_folder_of_a_case_it_never_began(tmp_path):
    from mpibench.drive.batching import remove_unreached

    cases = tmp_path / "cases"
    for name, files in {"begun": ["schedule.toml", "run/"], "finished": ["schedule.toml"],
                        "never-begun": ["schedule.toml"], "empty": [], "notes": ["notes.txt"]}.items():
        (cases / name).mkdir(parents=True)
        for f in files:
            (cases / name / f.rstrip("/")).mkdir() if f.endswith("/") else (cases / name / f).write_text("x")
    assert remove_unreached(tmp_path, {"finished"}) == ["empty", "never-begun"]
    assert sorted(p.name for p in cases.iterdir()) == ["begun", "finished", "notes"]
    assert remove_unreached(tmp_path / "no-sweep-here", set()) == []
