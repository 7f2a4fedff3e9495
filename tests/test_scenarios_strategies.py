"""Every named scenario under rd, rabenseifner, hier and auto, through the main job (simulated;
on MPI in make test-slow): all of them
under shrink, and under respawn those that kill a process inside the reduction (the recovery
policy acts only on a dead process, and a strategy meets a respawn only through a reduction
that lost a member).

The same launches and checks as tests/test_scenarios.py (whose helpers this
reuses), narrowed to the logarithmic strategies: every invariant must hold
at every step, kills at every phase included, and the mid-reduction kills
must have fired after the scheduled number of messages of these strategies.

Four scenarios are left to tests/test_emulated.py, whose main jobs run them under every
checked strategy at this world size under both recoveries (none, kill-mid-reduction,
kill-ps-server, partition-heal; the same checks, the kills' phases and message counts
included): launching them here too ran the same scenario x strategy x recovery twice. The
host path still meets a kill in each phase here (mid-reduction after 1 message in cascade,
after 2 in kill-coordinator) and a healed cut (partition-coordinator-minority).

Under respawn the kills outside the reduction (before compute, after reduce, after apply) run in
tests/test_scenarios.py under ring and PS only: the strategy has finished or not begun when they
strike, and what they test (the roll-back before the replacement takes the survivors'
parameters, the cursors handed over) is the recovery's, the same under every strategy.
"""
import os
import subprocess
import sys

import pytest

from mpirun import Job
from test_scenarios import ALL, KILLS, assert_clean, main_job, rows_of

pytestmark = pytest.mark.mpi

NEW = ("rd", "rabenseifner", "hier", "auto")
WORLD = 3
ON_THE_EMULATED_DEVICE = ("none", "kill-mid-reduction", "kill-ps-server", "partition-heal")


def scenarios_for(recovery: str) -> list[str]:
    """Under respawn, the scenarios whose schedule kills a process in the middle of a reduction
    (read from the schedule itself)."""
    from mpibench.faults.scenarios import build

    mine = [s for s in ALL if s not in ON_THE_EMULATED_DEVICE]
    if recovery == "shrink":
        return mine
    return [s for s in mine if any(e.kind == "kill" and e.phase == "mid_reduction" for e in build(s, WORLD).events)]


def test_respawn_keeps_the_kills_inside_the_reduction_and_the_rest_run_elsewhere():
    from test_scenarios import RESPAWNED

    kills = scenarios_for("respawn")
    assert set(kills) == {"cascade", "kill-coordinator"}, kills
    # every other kill meets a respawn under ring and PS (tests/test_scenarios.py)
    assert set(KILLS) | {"cascade"} <= set(kills) | set(ON_THE_EMULATED_DEVICE) | set(RESPAWNED)


def test_the_scenarios_left_out_here_run_on_the_emulated_device():
    from test_emulated import MAIN_SCENARIOS

    from mpibench.sync.registry import CHECKED

    assert set(ON_THE_EMULATED_DEVICE) <= set(MAIN_SCENARIOS) and set(NEW) <= set(CHECKED)
    assert set(scenarios_for("shrink")) | set(ON_THE_EMULATED_DEVICE) == set(ALL)


def simulated_main_job(tmp_path, n, scenarios, *args, timeout=240, strategies=("ring", "ps")):
    """The main job as ``main_job`` runs it, on ``n`` simulated processes (``--engine sim``)."""
    env = {**os.environ, "MPIBENCH_NO_BENCH": "1", "MPIBENCH_NO_SWEEP": "1",
           "MPIBENCH_SCENARIOS": ",".join(scenarios), "MPIBENCH_STRATEGIES": ",".join(strategies)}
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mpibench", "--engine", "sim", "--ranks", str(n), "--steps", "5", *args,
           "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp_path)
    return Job(done.returncode, done.stdout, done.stderr, out)


# The simulated engine gives these cases the rows MPI gives them (tests/test_sim_twin.py: a
# slice here, the whole matrix in make test-slow), so the matrix runs simulated in make test
# and on MPI in make test-slow.
@pytest.mark.parametrize("engine", ["sim", pytest.param("mpi", marks=pytest.mark.slow)])
@pytest.mark.parametrize("recovery", ["shrink", "respawn"])
def test_every_scenario_under_the_logarithmic_strategies(tmp_path, recovery, engine):
    scenarios = scenarios_for(recovery)
    launch = main_job if engine == "mpi" else simulated_main_job
    job = launch(tmp_path, WORLD, scenarios, "--recovery", recovery, timeout=900, strategies=NEW)
    assert_clean(job, {(s, k) for s in scenarios for k in NEW})
    faults, steps = job.csv("faults.csv"), job.csv("steps.csv")
    for scenario, phase in KILLS.items():
        if scenario not in scenarios:
            continue
        for strategy in NEW:
            kills = rows_of(faults, scenario, strategy)
            kills = kills[kills.kind == "kill"]
            assert list(kills.phase) == [phase], (scenario, strategy, kills)
            if scenario == "kill-coordinator":
                assert "after 2 message(s)" in kills.detail.iloc[0]
    assert steps[steps.strategy == "hier"].algorithm.str.startswith("hier[1 node").all()
    assert steps[steps.strategy == "auto"].algorithm.str.startswith("auto:").all()
