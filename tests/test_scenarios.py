"""Every named scenario under ring and PS, both recovery policies, through real mpirun jobs.

Many scenarios share one launch (the main job narrowed with MPIBENCH_SCENARIOS,
benchmarks left out with MPIBENCH_NO_BENCH=1) to keep the suite fast. The
tests read the records, not only the exit status.

Exit status of jobs that respawn: the launch marks spawned jobs recoverable
(``--prtemca state_base_recoverable 1``, as the Makefile does), otherwise mpirun
reports 137 once a later kill scenario SIGKILLs a replacement. A process whose
MPI_Finalize hangs after a failure is ended by SIGALRM (142, see
``faults.ulfm.exit_process``) after the summary was printed; the verdict is then
read from the printed summary.
"""
import json
import os

import pytest

from mpirun import mpirun_command, run_mpi

pytestmark = pytest.mark.mpi

ALL = ["none", "short-epochs", "kill-before-compute", "kill-mid-reduction", "kill-after-reduce",
       "kill-after-apply", "kill-ps-server", "cascade", "straggler", "straggler-dropped",
       "partition-minority", "partition-heal", "split-brain"]
KILLS = {"kill-before-compute": "before_compute", "kill-mid-reduction": "mid_reduction",
         "kill-after-reduce": "after_reduce", "kill-after-apply": "after_apply",
         "kill-ps-server": "mid_reduction"}
AFTER_THE_VERDICT = (142,)  # see the module docstring
RECOVERABLE = ["--prtemca", "state_base_recoverable", "1"]


def launcher() -> list[str]:
    command = mpirun_command()
    return command if "state_base_recoverable" in command else command + RECOVERABLE


def main_job(tmp_path, n, scenarios, *args, timeout=240):
    os.environ["MPIBENCH_NO_BENCH"] = os.environ["MPIBENCH_NO_SWEEP"] = "1"
    os.environ["MPIBENCH_SCENARIOS"] = ",".join(scenarios)
    try:
        job = run_mpi(n, ["--steps", "5", *args], tmp_path, timeout=timeout,
                      mpirun=launcher() + ["-x", "MPIBENCH_NO_BENCH", "-x", "MPIBENCH_SCENARIOS",
                                           "-x", "MPIBENCH_NO_SWEEP"])
    finally:
        del os.environ["MPIBENCH_NO_BENCH"], os.environ["MPIBENCH_SCENARIOS"], os.environ["MPIBENCH_NO_SWEEP"]
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
    assert job.returncode in (0, *AFTER_THE_VERDICT), job.text[-4000:]
    assert "Traceback" not in job.text and "stuck:" not in job.text, job.text[-4000:]
    rows = summary_rows(job)
    assert set(rows) == expected, rows
    assert all(r[2] == 0 for r in rows.values()), rows
    checks = job.csv("invariants.csv")
    assert (checks.passed.astype(str) == "True").all(), checks[checks.passed.astype(str) != "True"]


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
        dead = [3, 2] if scenario == "cascade" else [3]
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


def test_partitions_stall_the_minority_without_applying(shrink_job):
    steps, faults = shrink_job.csv("steps.csv"), shrink_job.csv("faults.csv")
    for strategy in ("ring", "ps"):
        for scenario, cut_steps in (("partition-minority", [1, 2, 3, 4]), ("partition-heal", [1, 2])):
            s = rows_of(steps, scenario, strategy).set_index("step")
            assert list(s.loc[cut_steps, "excluded"]) == ["3:unreachable"] * len(cut_steps)
            stalls = rows_of(faults, scenario, strategy)
            stalls = stalls[stalls.kind == "stall"]
            assert list(stalls.step) == cut_steps
            digests = {d.split("digest ")[1] for d in stalls.detail}
            assert len(digests) == 1  # the stalled worker's parameters never moved
        healed = rows_of(faults, "partition-heal", strategy)
        assert list(healed[healed.kind == "resync"].step) == [3]
        assert "3" in rows_of(steps, "partition-heal", strategy).set_index("step").loc[3, "contributing"].split()


def test_split_brain_commits_nothing_until_healed(shrink_job):
    steps, faults = shrink_job.csv("steps.csv"), shrink_job.csv("faults.csv")
    for strategy in ("ring", "ps"):
        assert list(rows_of(steps, "split-brain", strategy).step) == [0, 3, 4]
        stalls = rows_of(faults, "split-brain", strategy)
        stalls = stalls[stalls.kind == "stall"]
        assert sorted(zip(stalls.step, stalls["rank"].astype(int))) == [(s, w) for s in (1, 2) for w in range(4)]
        assert stalls.detail.map(lambda d: d.split("digest ")[1]).nunique() == 1


def test_respawn_restores_the_batch_with_identical_parameters(tmp_path):
    scenarios = ["kill-mid-reduction", "kill-ps-server", "cascade"]
    job = main_job(tmp_path, 4, scenarios, "--recovery", "respawn")
    assert_clean(job, {(s, k) for s in scenarios for k in ("ring", "ps")})
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


def test_kill_scenarios_refuse_without_ulfm(tmp_path):
    plain = [c for c in mpirun_command() if c not in ("--with-ft", "ulfm")]
    job = run_mpi(2, ["run", "--scenario", "kill-before-compute"], tmp_path, timeout=60, mpirun=plain)
    assert job.returncode == 2, job.text
    assert "--with-ft ulfm" in job.stderr


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


def test_main_job_on_eight_ranks(tmp_path):
    job = main_job(tmp_path, 8, ALL, timeout=300)
    assert_clean(job, {(s, k) for s in ALL for k in ("ring", "ps")})
    steps = job.csv("steps.csv")
    assert steps.effective_batch.max() == 8 * 16
