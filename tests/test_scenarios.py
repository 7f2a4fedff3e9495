"""Every named scenario under ring and PS, both recovery policies, through real mpirun jobs.

Many scenarios share one launch (the main job narrowed with MPIBENCH_SCENARIOS,
benchmarks left out with MPIBENCH_NO_BENCH=1) to keep the suite fast. The
tests read the records, not only the exit status.

Exit status of jobs that respawn: the launch marks spawned jobs recoverable
(``--prtemca state_base_recoverable 1``, as the Makefile does), otherwise mpirun
reports 137 once a later kill scenario SIGKILLs a replacement. A job that lived
through a failure leaves without MPI_Finalize (``faults.ulfm.exit_process``),
so its exit status is the verdict's: nothing else is accepted.
"""
import json
import os

import pytest

from mpirun import mpirun_command, run_mpi

pytestmark = pytest.mark.mpi

ALL = ["none", "short-epochs", "kill-before-compute", "kill-mid-reduction", "kill-after-reduce",
       "kill-after-apply", "kill-ps-server", "cascade", "straggler", "straggler-dropped",
       "partition-minority", "partition-heal", "split-brain", "kill-coordinator",
       "partition-coordinator-minority"]
KILLS = {"kill-before-compute": "before_compute", "kill-mid-reduction": "mid_reduction",
         "kill-after-reduce": "after_reduce", "kill-after-apply": "after_apply",
         "kill-ps-server": "mid_reduction", "kill-coordinator": "mid_reduction"}
DEAD = {"cascade": [3, 2], "kill-coordinator": [0]}  # at 4 ranks; the others kill worker 3
RECOVERABLE = ["--prtemca", "state_base_recoverable", "1"]


def launcher() -> list[str]:
    command = mpirun_command()
    return command if "state_base_recoverable" in command else command + RECOVERABLE


def main_job(tmp_path, n, scenarios, *args, timeout=240, strategies=("ring", "ps")):
    os.environ["MPIBENCH_NO_BENCH"] = os.environ["MPIBENCH_NO_SWEEP"] = "1"
    os.environ["MPIBENCH_SCENARIOS"] = ",".join(scenarios)
    os.environ["MPIBENCH_STRATEGIES"] = ",".join(strategies)
    try:
        job = run_mpi(n, ["--steps", "5", *args], tmp_path, timeout=timeout,
                      mpirun=launcher() + ["-x", "MPIBENCH_NO_BENCH", "-x", "MPIBENCH_SCENARIOS",
                                           "-x", "MPIBENCH_STRATEGIES", "-x", "MPIBENCH_NO_SWEEP"])
    finally:
        del os.environ["MPIBENCH_NO_BENCH"], os.environ["MPIBENCH_SCENARIOS"], os.environ["MPIBENCH_STRATEGIES"]
        del os.environ["MPIBENCH_NO_SWEEP"]
    return job


def summary_rows(job):
    """scenario/strategy -> (steps, checks, violations, batch min, batch max) from the table."""
    rows, lines = {}, job.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("scenario") and "violations" in line)
    for line in lines[start + 2:]:
        parts = line.split()
        if len(parts) != 7 or not parts[2].isdigit():
            break
        rows[(parts[0], parts[1])] = tuple(int(p) for p in parts[2:5]) + tuple(parts[5:])
    return rows


def rows_of(frame, scenario, strategy):
    return frame[(frame.scenario == scenario) & (frame.strategy == strategy)]


def assert_clean(job, expected):
    assert job.returncode == 0, job.text[-4000:]
    assert "Traceback" not in job.text and "stuck:" not in job.text, job.text[-4000:]
    rows = summary_rows(job)
    assert set(rows) == expected, rows
    assert all(r[2] == 0 for r in rows.values()), rows
    checks = job.csv("invariants.csv")
    assert (checks.passed.astype(str) == "True").all(), checks[checks.passed.astype(str) != "True"]
    verdict = json.loads((job.out / "verdict.json").read_text())
    assert verdict["verdict"] == "pass" and len(verdict["cases"]) == len(expected), verdict["reason"]


@pytest.fixture(scope="module")
def shrink_job(tmp_path_factory):
    out = tmp_path_factory.mktemp("shrink")
    return main_job(out, 4, ALL)


def test_every_scenario_under_ring_and_ps_holds_every_invariant(shrink_job):
    assert_clean(shrink_job, {(s, k) for s in ALL for k in ("ring", "ps")})
    info = json.loads((shrink_job.out / "run.json").read_text())
    assert info["ulfm"]["active"] is True


def test_ring_and_ps_see_identical_schedules(shrink_job):
    steps = shrink_job.csv("steps.csv")
    same = ["step", "members", "contributing", "excluded", "effective_batch"]
    for scenario in ALL:
        ring = rows_of(steps, scenario, "ring")[same].reset_index(drop=True)
        ps = rows_of(steps, scenario, "ps")[same].reset_index(drop=True)
        assert ring.equals(ps), scenario


@pytest.mark.parametrize("scenario", sorted(KILLS) + ["cascade"])
def test_kills_shrink_the_batch_and_are_logged(shrink_job, scenario):
    steps, faults = shrink_job.csv("steps.csv"), shrink_job.csv("faults.csv")
    for strategy in ("ring", "ps"):
        s = rows_of(steps, scenario, strategy)
        assert list(s.step) == [0, 1, 2, 3, 4]  # the failed step is redone, once
        before, after = s[s.step < 2], s[s.step >= 2]
        assert after.effective_batch.max() < before.effective_batch.min()
        dead = DEAD.get(scenario, [3])
        assert all(str(w) not in m.split() for m in after.members.astype(str) for w in dead)
        assert all(f"{w}:dead" in e for e in after.excluded for w in dead)
        kills = rows_of(faults, scenario, strategy)
        kills = kills[kills.kind == "kill"]
        assert sorted(kills["rank"].astype(int)) == sorted(dead) and (kills.step == 2).all()
        assert all("signal 9" in d for d in kills.detail)
        for w in dead:  # the process id is run-specific: the log has it, the record does not
            assert f"fault: worker {w} (pid " in shrink_job.stdout
        assert not any("pid" in d for d in kills.detail)
        if scenario in KILLS:
            assert list(kills.phase) == [KILLS[scenario]]
        else:
            assert set(kills.phase) == {"mid_reduction", "recovery"}


def test_stragglers_waited_for_or_dropped_for_their_steps_only(shrink_job):
    steps, faults = shrink_job.csv("steps.csv"), shrink_job.csv("faults.csv")
    for strategy in ("ring", "ps"):
        waited = rows_of(steps, "straggler", strategy)
        assert (waited.excluded == "").all() and waited.effective_batch.nunique() == 1
        dropped = rows_of(steps, "straggler-dropped", strategy).set_index("step")
        assert list(dropped.loc[[1, 2], "excluded"]) == ["3:late", "3:late"]
        assert (dropped.loc[[0, 3, 4], "excluded"] == "").all()
        assert all("3" in c.split() for c in dropped.loc[[3, 4], "contributing"].astype(str))
        logged = rows_of(faults, "straggler-dropped", strategy)
        assert all("dropped" in d for d in logged.detail) and list(logged.step) == [1, 2]


def stall_records(job, scenario, strategy, worker):
    """``worker``'s committed attempts in which it stalled, from its history file."""
    (case,) = (job.out / "history").glob(f"*-{scenario}-{strategy}-shrink")
    lines = [json.loads(line) for line in (case / f"worker-{worker}.jsonl").read_text().splitlines()]
    return [a for a, d in zip(lines, lines[1:]) if a["kind"] == "attempt" and a["role"] == "stall"
            and d.get("decision") == "commit"]


def test_partitions_stall_the_minority_without_applying(shrink_job):
    steps, faults = shrink_job.csv("steps.csv"), shrink_job.csv("faults.csv")
    for strategy in ("ring", "ps"):
        for scenario, cut_steps in (("partition-minority", [1, 2, 3, 4]), ("partition-heal", [1, 2])):
            s = rows_of(steps, scenario, strategy).set_index("step")
            assert list(s.loc[cut_steps, "excluded"]) == ["3:unreachable"] * len(cut_steps)
            stalls = stall_records(shrink_job, scenario, strategy, 3)
            assert [a["step"] for a in stalls] == cut_steps and not any(a["batch"] for a in stalls)
            digests = {d for a in stalls for d in (a["params_before"], a["params_after"])}
            assert len(digests) == 1  # the stalled worker's parameters never moved
        healed = rows_of(faults, "partition-heal", strategy)
        assert list(healed[healed.kind == "resync"].step) == [3]
        assert "3" in rows_of(steps, "partition-heal", strategy).set_index("step").loc[3, "contributing"].split()


def test_worker_zero_cut_off_stalls_and_takes_the_majority_parameters_back(shrink_job):
    steps, faults = shrink_job.csv("steps.csv"), shrink_job.csv("faults.csv")
    for strategy in ("ring", "ps"):
        s = rows_of(steps, "partition-coordinator-minority", strategy).set_index("step")
        assert list(s.loc[[1, 2], "excluded"]) == ["0:unreachable"] * 2
        assert list(s.loc[[1, 2], "contributing"].astype(str)) == ["1 2 3"] * 2
        assert (s.loc[[0, 3, 4], "contributing"].astype(str) == "0 1 2 3").all()
        f = rows_of(faults, "partition-coordinator-minority", strategy)
        stalls = f[f.kind == "stall"]
        assert list(zip(stalls.step, stalls["rank"].astype(int))) == [(1, 0), (2, 0)]
        resync = f[f.kind == "resync"]
        assert list(resync.step) == [3] and "from worker 1" in resync.detail.iloc[0]


def test_records_follow_the_first_live_worker_when_worker_zero_dies(shrink_job):
    steps = shrink_job.csv("steps.csv")
    for strategy in ("ring", "ps"):
        s = rows_of(steps, "kill-coordinator", strategy)
        assert list(s.step) == [0, 1, 2, 3, 4]  # written by worker 0, then by worker 1: none lost or twice
        assert (s[s.step >= 2].members.astype(str) == "1 2 3").all()


def test_split_brain_commits_nothing_until_healed(shrink_job):
    steps, faults = shrink_job.csv("steps.csv"), shrink_job.csv("faults.csv")
    for strategy in ("ring", "ps"):
        assert list(rows_of(steps, "split-brain", strategy).step) == [0, 3, 4]
        stalls = rows_of(faults, "split-brain", strategy)
        stalls = stalls[stalls.kind == "stall"]
        assert sorted(zip(stalls.step, stalls["rank"].astype(int))) == [(s, w) for s in (1, 2) for w in range(4)]
        assert stalls.detail.map(lambda d: d.split("digest ")[1]).nunique() == 1


# Every kill phase under respawn: the ones outside the reduction run here only (the logarithmic
# strategies meet respawn in tests/test_scenarios_strategies.py through kills inside it).
RESPAWNED = ["kill-before-compute", "kill-mid-reduction", "kill-after-reduce", "kill-after-apply",
             "kill-ps-server", "cascade", "kill-coordinator"]


def test_respawn_restores_the_batch_with_identical_parameters(tmp_path):
    scenarios = RESPAWNED
    job = main_job(tmp_path, 4, scenarios + ["partition-coordinator-minority"], "--recovery", "respawn")
    assert_clean(job, {(s, k) for s in scenarios + ["partition-coordinator-minority"] for k in ("ring", "ps")})
    steps, faults = job.csv("steps.csv"), job.csv("faults.csv")
    checks = job.csv("invariants.csv")
    for scenario in scenarios:
        for strategy in ("ring", "ps"):
            s = rows_of(steps, scenario, strategy)
            assert (s.members.astype(str) == "0 1 2 3").all()  # replacements took the dead ids back
            assert s.effective_batch.nunique() == 1
            respawns = rows_of(faults, scenario, strategy)
            respawns = respawns[respawns.kind == "respawn"]
            assert len(respawns) == (2 if scenario == "cascade" else 1)
            # the replicas check after the redone step covers the replacements' parameters, bitwise
            replicas = rows_of(checks, scenario, strategy)
            replicas = replicas[(replicas.invariant == "replicas") & (replicas.step >= 2)]
            assert (replicas.passed.astype(str) == "True").all()
            assert all("4 replicas identical" in d for d in replicas.detail)


def test_bad_schedule_file_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[kill]]\nrank = 9\nstep = 1\n")
    job = run_mpi(2, ["run", "--scenario", str(bad)], tmp_path / "out", timeout=60)
    assert job.returncode == 2, job.text
    assert "outside the world" in job.stderr and "Traceback" not in job.text
    small = run_mpi(2, ["run", "--scenario", "partition-heal"], tmp_path / "out2", timeout=60)
    assert small.returncode == 2 and "needs at least 3 ranks" in small.stderr


def test_kill_scenarios_are_not_run_without_ulfm(tmp_path):
    plain = [c for c in mpirun_command() if c not in ("--with-ft", "ulfm")]
    job = run_mpi(2, ["run", "--scenario", "kill-before-compute"], tmp_path, timeout=60, mpirun=plain)
    assert job.returncode == 4, job.text  # partial: the one planned case was not run
    assert "needs --with-ft ulfm: kill-before-compute/native" in job.stdout and "Traceback" not in job.text
    phase = json.loads((tmp_path / "phases" / "000-kill-before-compute-native-shrink.json").read_text())
    assert phase == {"phase": "000-kill-before-compute-native-shrink", "status": "not_run", "needs": "--with-ft ulfm"}
    assert not (tmp_path / "history").exists(), "nothing of the case ran"


def test_a_run_that_cannot_progress_ends_with_a_diagnostic(tmp_path):
    # Worker 2 sleeps far longer than the step budget (10 x --deadline-s, at least 5 s):
    # the others block in the commit agreement, which has no deadline of its own, so
    # the step watchdog must end the job, naming the step and the members.
    schedule = tmp_path / "asleep.toml"
    schedule.write_text('name = "asleep"\nworld_size = 3\n\n[[delay]]\nrank = 2\nsteps = [1]\n'
                        'seconds = 30.0\nwhere = "compute"\n')
    job = run_mpi(3, ["run", "--scenario", str(schedule), "--steps", "3", "--deadline-s", "0.1"],
                  tmp_path / "out", timeout=60)
    assert job.returncode == 1, job.text
    assert "stuck: step 1 made no progress for 5 s on members 0 1 2" in job.stderr, job.text
    assert list(job.csv("steps.csv").step) == [0]  # what was committed before is kept


# The scenarios whose schedule takes another shape at 8 ranks than at 4 (a minority of three, a
# coordinator's side of three, halves of four); a single kill, a straggler or a fault-free run
# is the same story at any size, and the 4-rank job above runs each of those.
AT_EIGHT = ["none", "cascade", "partition-minority", "partition-heal", "split-brain",
            "partition-coordinator-minority"]


def test_main_job_on_eight_ranks(tmp_path):
    job = main_job(tmp_path, 8, AT_EIGHT, timeout=300)
    assert_clean(job, {(s, k) for s in AT_EIGHT for k in ("ring", "ps")})
    steps = job.csv("steps.csv")
    assert steps.effective_batch.max() == 8 * 16
    for strategy in ("ring", "ps"):
        cut = rows_of(steps, "partition-minority", strategy).set_index("step")
        assert list(cut.loc[[1, 2, 3, 4], "contributing"].astype(str)) == ["0 1 2 3 4"] * 4
        coordinator = rows_of(steps, "partition-coordinator-minority", strategy).set_index("step")
        assert list(coordinator.loc[[1, 2], "contributing"].astype(str)) == ["1 2 3 4 5"] * 2
        assert list(rows_of(steps, "split-brain", strategy).step) == [0, 3, 4]


@pytest.mark.parametrize("strategy", ["ring", "ps"])
def test_a_late_worker_zero_that_cannot_be_dropped_alone_is_waited_for_then_left_out(tmp_path, strategy):
    # Two workers, worker 0 late: the on-time half lacks the lowest id, so it may not commit
    # on its own; the step falls back to the agreement over everyone and then leaves 0 out.
    schedule = tmp_path / "late0.toml"
    schedule.write_text('name = "late0"\nworld_size = 2\n\n[[delay]]\nrank = 0\nsteps = [1, 2]\n'
                        'seconds = 0.6\nwhere = "compute"\n')
    job = run_mpi(2, ["run", "--strategy", strategy, "--scenario", str(schedule), "--steps", "5",
                      "--straggler-deadline", "0.15"], tmp_path / "out", timeout=120, mpirun=launcher())
    assert job.returncode == 0, job.text[-3000:]
    steps = job.csv("steps.csv").set_index("step")
    assert list(steps.loc[[1, 2], "excluded"]) == ["0:late", "0:late"]
    assert (steps.loc[[0, 3, 4], "contributing"].astype(str) == "0 1").all()
    checks = job.csv("invariants.csv")
    assert (checks.passed.astype(str) == "True").all()
