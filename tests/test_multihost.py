"""The suite across several hosts: network namespaces on one machine (``mpibench.testbed``).

One 3-host testbed serves the module. Across it: ``run --scenario none`` and a
kill scenario with every invariant passing; a real network partition (nftables)
under ring and PS, judged and replayed to the same rows; a cut held past the
step watchdog ends the job without a hang. Afterwards nothing the testbed
made may be left (namespace, link, /etc/netns file, process).

Without root or network namespaces the MPI tests skip with the reason; under
``CI=true`` they fail instead, so CI cannot pass by skipping.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from mpibench.faults.toml_io import loads
from mpibench.faults.schedule import validate
from mpibench.testbed import cut, netfault, netns, verdict
from mpibench.testbed.job import NETWORK_SCENARIO, run_job
from mpibench.testbed.launch import Launcher, Placement

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ("steps.csv", "invariants.csv", "faults.csv", "netfaults.csv")
SMALL = ["--steps", "6", "--deadline-s", "1"]


# ---------------------------------------------------------------- without root
@pytest.mark.parametrize("hosts", [2, 3, 4, 7])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_drawn_cut_is_seeded_and_keeps_the_recorder_on_the_larger_side(hosts, seed):
    first = netfault.draw(seed, hosts, 8, 2.0)
    assert first == netfault.draw(seed, hosts, 8, 2.0)
    majority, minority = first.sides
    assert 0 in majority and sorted(majority + minority) == list(range(hosts))
    assert len(minority) >= 1 and (hosts == 2 or len(majority) > len(minority))
    assert 1 <= first.at_step < 8


@pytest.mark.parametrize("ranks_per_host", [1, 2])
def test_gate_schedule_is_a_valid_delay_of_the_first_cut_off_worker(ranks_per_host):
    part = netfault.NetPartition(((0, 1), (2,)), at_step=2, hold_s=2.0)
    text = netfault.gate_toml(part, ranks_per_host, NETWORK_SCENARIO)
    schedule = validate(loads(text, 3 * ranks_per_host))
    (delay,) = schedule.delays
    assert delay.rank == 2 * ranks_per_host and delay.steps == (2,) and delay.where == "compute"


def test_cut_rules_drop_only_input_from_the_other_side():
    text = cut.rules(["198.18.0.3", "198.18.0.4"])
    assert "hook input" in text and "hook output" not in text
    assert "ip saddr { 198.18.0.3, 198.18.0.4 } counter drop" in text


def test_verdict_names_split_brain_and_failure_from_log_lines(tmp_path):
    (tmp_path / "invariants.csv").write_text("scenario,strategy,step,invariant,passed,detail\n"
                                             "s,ring,0,equivalence,true,\n")
    (tmp_path / "steps.csv").write_text("scenario,step\ns,0\n")
    part = netfault.NetPartition(((0, 1), (2,)), at_step=1, hold_s=2.0)
    timeline = netfault.Timeline([("seen", 1.0, 1), ("cut", 1.1, 1), ("heal", 3.1, 1)])
    minority_goes_on = "fault: worker 0 (pid 12) killed at step 1; survivors saw: x\n"
    found = verdict.judge_partition(tmp_path, minority_goes_on, 2, part, 1, timeline)
    assert found.outcome == "split-brain" and found.status == 1
    majority_goes_on = "fault: worker 2 (pid 12) killed at step 1; survivors saw: x\n"
    assert verdict.judge_partition(tmp_path, majority_goes_on, 2, part, 1, timeline).outcome == "failure"
    stuck = "[0@h0] stuck: step 1 made no progress for 10 s on members 0 1 2; aborting the job\n"
    assert verdict.judge_partition(tmp_path, stuck, 2, part, 1, timeline).outcome == "stalled"
    late = netfault.Timeline([("seen", 1.0, 1), ("cut", 1.1, 1), ("heal", 3.1, 2)])
    assert verdict.judge_partition(tmp_path, "", 2, part, 1, late).status == 1
    assert verdict.judge_partition(tmp_path, "", 2, part, 1, netfault.Timeline()).status == 3


def test_a_fenced_minority_is_a_failure_and_one_that_commits_alone_is_split_brain(tmp_path):
    (tmp_path / "invariants.csv").write_text("scenario,strategy,step,invariant,passed,detail\n")
    part = netfault.NetPartition(((0, 1), (2,)), at_step=1, hold_s=2.0)
    timeline = netfault.Timeline([("seen", 1.0, 1), ("cut", 1.1, 1), ("heal", 3.1, 3)])
    both = ("fault: worker 2 (pid 1) reported failed (not scheduled: suspected) at step 1; survivors saw: x\n"
            "fault: worker 0 (pid 2) reported failed (not scheduled: suspected) at step 1; survivors saw: y\n")
    fenced = both + "fault: no quorum: workers 2 of 0 1 2 stall at step 1 (...)\n"
    assert verdict.judge_partition(tmp_path, fenced, 4, part, 1, timeline).outcome == "failure"
    assert verdict.judge_partition(tmp_path, both, 4, part, 1, timeline).outcome == "split-brain"
    case = tmp_path / "history" / "000-case"
    case.mkdir(parents=True)
    (case / "worker-2.jsonl").write_text(
        '{"kind":"attempt","step":1,"attempt":1,"group":[2]}\n{"kind":"decision","step":1,"attempt":1,'
        '"decision":"commit"}\n{"kind":"attempt","step":2,"attempt":0,"group":[2]}\n')
    assert verdict.side_commits(tmp_path, {2}, 1) == [1] and verdict.side_commits(tmp_path, {2}, 2) == []
    assert verdict.judge_partition(tmp_path, fenced, 4, part, 1, timeline).outcome == "split-brain"


def test_testbed_never_imports_mpi4py():
    code = ("import sys, mpibench.testbed.job, mpibench.testbed.verdict, mpibench.testbed.cut;"
            "sys.exit('mpi4py' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_no_invariants_is_no_verdict_never_a_pass(tmp_path):
    assert verdict.judge(tmp_path, "", 4).status == 3


# ---------------------------------------------------------------- the testbed
def _skip_or_fail_without_namespaces() -> None:
    reason = netns.unavailable()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but no multi-host testbed can be built: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def launcher(tmp_path_factory):
    _skip_or_fail_without_namespaces()
    testbed = netns.Testbed(3)
    try:
        testbed.up()
        testbed.wait_reachable()
        yield Launcher(testbed, tmp_path_factory.mktemp("testbed"))
    finally:
        testbed.down()
    assert netns.leftovers(testbed.name) == []


def _run(launcher, tmp_path, name, args, partition=None, timeout_s=90):
    out = tmp_path / name
    cwd = tmp_path / f"{name}-cwd"
    cwd.mkdir()
    result = run_job(launcher, Placement(3, 1), args, out, timeout_s, partition=partition, cwd=cwd)
    return result


def _rows(out: Path, name: str) -> pd.DataFrame:
    frame = pd.read_csv(out / name, keep_default_na=False, dtype=str)
    if "scenario" in frame.columns:  # a schedule file is recorded by its absolute path: each run has its own copy
        frame["scenario"] = frame["scenario"].map(lambda s: Path(s).name if s.endswith(".toml") else s)
    return frame[[c for c in frame.columns if not c.endswith("_s")]]


@pytest.mark.mpi
@pytest.mark.multihost
@pytest.mark.parametrize("strategy, scenario", [("ring", "none"), ("ps", "none"),
                                                ("ring", "kill-mid-reduction"),
                                                ("ps", "kill-before-compute")])
def test_scenario_across_three_hosts(launcher, tmp_path, strategy, scenario):
    result = _run(launcher, tmp_path, "out", ["run", "--strategy", strategy, "--scenario", scenario,
                                              *SMALL])
    found = verdict.judge(result.out, result.text, 6)
    assert found.status == 0, f"{found.line()}\n{result.text[-3000:]}"
    import json

    info = json.loads((result.out / "run.json").read_text())
    assert info["host_count"] == 3, info["hosts"]
    assert set(info["hosts"]) == {h.name for h in launcher.testbed.hosts}
    if scenario != "none":
        faults = pd.read_csv(result.out / "faults.csv", keep_default_na=False)
        assert list(faults["kind"]) == ["kill"] and list(faults["rank"]) == [2]


@pytest.mark.mpi
@pytest.mark.multihost
@pytest.mark.parametrize("strategy", ["ring", "ps"])
def test_network_partition_is_tolerated_and_replays_to_the_same_rows(launcher, tmp_path, strategy):
    part = netfault.draw(seed=3, hosts=3, steps=6, hold_s=2.0)
    args = ["run", "--strategy", strategy, "--seed", "3", *SMALL]
    runs = [_run(launcher, tmp_path, f"run{i}", args, part) for i in range(2)]
    for result in runs:
        found = verdict.judge_partition(result.out, result.text, 6, part, 1, result.timeline)
        assert found.outcome == "tolerated", f"{found.line()}\n{result.text[-3000:]}"
        assert sum(result.timeline.dropped.values()) > 0, "the cut dropped real packets"
        assert [w for w, *_ in result.timeline.events] == ["seen", "cut", "heal"]
    for name in RECORDS:
        assert _rows(runs[0].out, name).equals(_rows(runs[1].out, name)), name
    netfaults = _rows(runs[0].out, "netfaults.csv")
    assert list(netfaults["kind"]) == ["network-partition", "network-heal"]
    faults = _rows(runs[0].out, "faults.csv")
    assert "partition" not in set(faults["kind"]), "a network cut is never an emulated partition"


@pytest.mark.mpi
@pytest.mark.multihost
def test_cut_held_past_the_watchdog_stalls_safely_without_hanging(launcher, tmp_path):
    part = netfault.NetPartition(((0, 1), (2,)), at_step=2, hold_s=14.0)
    start = time.monotonic()
    result = _run(launcher, tmp_path, "stall", ["run", "--strategy", "ring", *SMALL], part,
                  timeout_s=60)
    found = verdict.judge_partition(result.out, result.text, 6, part, 1, result.timeline)
    assert found.outcome == "stalled" and found.status == 1, f"{found.line()}\n{result.text[-3000:]}"
    assert netfault.committed_steps(result.out) == [0, 1], "nothing committed from the cut on"
    assert time.monotonic() - start < 45


# Open MPI's heartbeat detector, as ``jobs/testbed.py --detector`` turns it on.
DETECTOR = ["--mca", "mpi_ft_detector", "true", "--mca", "mpi_ft_detector_period", "0.5",
            "--mca", "mpi_ft_detector_timeout", "2"]
SPLIT_BRAIN = ("committed twice", "not a strict majority", "although no side holds")


@pytest.mark.mpi
@pytest.mark.multihost
@pytest.mark.parametrize("strategy", ["ring", "ps"])
def test_cut_with_the_failure_detector_never_lets_two_sides_commit(launcher, tmp_path, strategy):
    """Both sides declare the other dead; only the side with a quorum goes on."""
    part = netfault.draw(seed=3, hosts=3, steps=40, hold_s=6.0)
    out, cwd = tmp_path / "out", tmp_path / "cwd"
    cwd.mkdir()
    result = run_job(launcher, Placement(3, 1), ["run", "--strategy", strategy, "--seed", "3",
                                                 "--steps", "40", "--deadline-s", "1"],
                     out, 60, DETECTOR, part, cwd=cwd)
    minority, majority = set(part.workers(1, 1)), set(part.workers(0, 1))
    found = verdict.judge_partition(out, result.text, 40, part, 1, result.timeline)
    assert found.outcome in ("tolerated", "failure", "stalled"), f"{found.line()}\n{result.text[-3000:]}"
    assert verdict.side_commits(out, minority, part.at_step) == [], "the cut-off side committed alone"
    faults = pd.read_csv(out / "faults.csv", keep_default_na=False)
    assert "kill" not in set(faults["kind"]), "nothing was killed"
    suspected = faults[faults["kind"] == "suspected"]
    assert all("survivors saw:" in d for d in suspected["detail"])
    fenced = faults[faults["kind"] == "no-quorum"]
    if {int(w) for w in suspected["rank"]} & majority:  # the cut-off side suspected the others
        assert list(fenced["rank"].astype(str)) == [" ".join(map(str, sorted(minority)))], result.text[-3000:]
    check = subprocess.run([sys.executable, "-m", "mpibench", "check", str(out)], capture_output=True,
                           text=True, timeout=60)
    rows = pd.read_csv(out / "invariants.csv", keep_default_na=False, dtype=str)
    bad = rows[(rows["passed"] != "true") & rows["detail"].str.contains("|".join(SPLIT_BRAIN))]
    assert bad.empty, bad.to_string()
    assert check.returncode in (0, 3), check.stdout + check.stderr  # pass, or the stall: cannot judge
    assert check.returncode == 0 or "stops at step" in check.stdout, check.stdout


# ---------------------------------------------------------------- teardown
TEARDOWN_DRIVER = """
import sys, time
from mpibench.testbed import netns
bed = netns.Testbed(2, name=sys.argv[1])
bed.up()
import subprocess
subprocess.Popen(bed.exec_prefix(bed.hosts[1]) + ["sleep", "300"], env=bed.env())
print("up", flush=True)
time.sleep(300)
"""


@pytest.mark.multihost
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_testbed_leaves_nothing(tmp_path, sig):
    _skip_or_fail_without_namespaces()
    name = f"mpbt{os.getpid() % 100000}"
    # SIGINT is made a KeyboardInterrupt explicitly: a shell that starts pytest in the
    # background leaves it ignored, and the ignore is inherited by the driver.
    driver = ("import signal,sys; signal.signal(signal.SIGTERM, lambda *_: sys.exit(3)); "
              "signal.signal(signal.SIGINT, signal.default_int_handler)\n" + TEARDOWN_DRIVER)
    proc = subprocess.Popen([sys.executable, "-c", driver, name], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert len(netns.leftovers(name)) >= 5  # 2 namespaces, bridge, 2 ports, files, sleep
        proc.send_signal(sig)
        proc.wait(timeout=30)
        left = netns.leftovers(name)
    finally:
        if proc.poll() is None:
            proc.kill()
        netns.remove_stale(name)  # a failed case must not leave its parts to the next one
    assert left == []


def test_failed_build_tears_down_what_it_made():
    _skip_or_fail_without_namespaces()
    bed = netns.Testbed(2, name=f"mpbf{os.getpid() % 100000}")
    bed.hosts.append(netns.Host(2, bed.hosts[0].name, "198.18.0.9", "bad"))  # a clash
    with pytest.raises(netns.TestbedError):
        bed.up()
    assert netns.leftovers(bed.name) == []


# ---------------------------------------------------------------- Slurm across nodes
@pytest.fixture(scope="module")
def slurm4(tmp_path_factory):
    """Four slurmd, one per testbed host, in one partition (see slurm_multinode.py)."""
    import slurm_cluster
    from slurm_multinode import MultiNodeSlurmCluster

    reason = slurm_cluster.missing() or netns.unavailable()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but no multi-node Slurm can start: {reason}")
        pytest.skip(reason)
    cluster = MultiNodeSlurmCluster(tmp_path_factory.mktemp("slurm4"), nodes=4, cpus=2)
    with cluster:
        yield cluster
    assert netns.leftovers(cluster.testbed.name) == []
    assert cluster.leftover_pids() == []


def _host_count(run_json: Path) -> int:
    import json

    return json.loads(run_json.read_text())["host_count"]


@pytest.mark.slurm
@pytest.mark.multihost
@pytest.mark.parametrize("recovery", ["shrink", "respawn"])
def test_slurm_job_on_two_nodes(slurm4, tmp_path, recovery):
    job = slurm4.sbatch(ROOT / "jobs" / "mpibench.sbatch", "run", "--strategy", "ring",
                        "--scenario", "kill-mid-reduction", "--recovery", recovery, "--steps", "5",
                        workdir=tmp_path, options=["-N", "2", "-n", "4", "--ntasks-per-node", "2"],
                        env={"MPIBENCH_OUT": str(tmp_path / "results")}, timeout_s=150)
    assert job.returncode == 0, job.text
    (out,) = (tmp_path / "results").glob("mpibench-*")
    assert _host_count(out / "run.json") == 2
    assert verdict.judge(out, job.log, 5).status == 0, job.text


@pytest.mark.slurm
@pytest.mark.multihost
@pytest.mark.parametrize("launch", ["srun"])
def test_slurm_mpich_job_on_two_nodes(slurm4, tmp_path, launch):
    """The MPICH family across nodes: the PyPI wheel (make venv MPI=mpich) under srun --mpi=pmi2;
    the probe sees both hosts with their CPUs. (Its own hydra mpiexec cannot start here: its
    proxies look the testbed's host names up, and nothing resolves them.)"""
    import json

    venv = ROOT / ".venv-mpich"
    if not (venv / "bin" / "python").exists():
        pytest.skip("no .venv-mpich: make venv MPI=mpich")
    job = slurm4.sbatch(ROOT / "jobs" / "mpibench.sbatch", "run", "--strategy", "ring", "--scenario", "none",
                        "--steps", "5", workdir=tmp_path, options=["-N", "2", "-n", "4", "--ntasks-per-node", "2"],
                        env={"MPIBENCH_OUT": str(tmp_path / "results"), "MPIBENCH_VENV": str(venv),
                             "MPIBENCH_LAUNCH": launch, "MPIBENCH_SRUN_MPI": "pmi2"}, timeout_s=150)
    assert job.returncode == 0, job.text
    (out,) = (tmp_path / "results").glob("mpibench-*")
    info = json.loads((out / "run.json").read_text())
    assert info["host_count"] == 2 and info["launch"]["family"] == "MPICH"
    assert [h["ranks"] for h in info["host_cpus"]] == [2, 2]
    assert verdict.judge(out, job.log, 5).status == 0, job.text


@pytest.mark.slurm
@pytest.mark.multihost
def test_slurm_scaling_on_one_two_four_nodes(slurm4, tmp_path):
    job = slurm4.sbatch(ROOT / "jobs" / "scaling.sbatch", "run", "--strategy", "ps",
                        "--scenario", "none", "--steps", "4",
                        workdir=tmp_path, options=["-N", "4", "-n", "4", "--ntasks-per-node", "1"],
                        env={"MPIBENCH_OUT": str(tmp_path / "results")}, timeout_s=180)
    assert job.returncode == 0, job.text
    (out,) = (tmp_path / "results").glob("scaling-*")
    assert {k: _host_count(out / f"nodes-{k}" / "run.json") for k in (1, 2, 4)} == {1: 1, 2: 2, 4: 4}


def test_parts_of_a_dead_testbed_are_found_and_removed():
    _skip_or_fail_without_namespaces()
    child = subprocess.run([sys.executable, "-c", "import os\nfrom mpibench.testbed import netns\n"
                            "bed = netns.Testbed(2); bed.up(); print(bed.name, flush=True); os._exit(0)"],
                           capture_output=True, text=True, timeout=60)
    name = child.stdout.strip()
    try:
        assert name in netns.stale_testbeds()
        assert len(netns.leftovers(name)) == 7  # 2 namespaces, bridge, 2 ports, 2 hosts files
    finally:
        netns.remove_stale(name)
    assert netns.leftovers(name) == []


@pytest.mark.parametrize("script, args", [
    ("jobs/testbed.py", ["--hosts", "0"]),
    ("jobs/testbed.py", ["--net-partition", "--", "run", "--scenario", "none"]),
    ("jobs/testbed.py", ["--hosts", "1", "--net-partition", "--", "run"]),
    ("lab/studies/multihost.py", ["--host-counts", "two"]),
])
@pytest.mark.parametrize("path", [None, "/usr/bin:/bin"], ids=["tools-on-path", "no-sbin-tools"])
def test_scripts_refuse_bad_usage_in_one_line(script, args, path):
    # Bad usage is bad on any machine: judged before the tools (nft, ip in /usr/sbin) are looked for.
    env = dict(os.environ, PATH=path) if path else None
    done = subprocess.run([sys.executable, str(ROOT / script), *args], capture_output=True, text=True, env=env)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
