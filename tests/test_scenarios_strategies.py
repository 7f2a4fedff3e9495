"""Every named scenario under rd, rabenseifner, hier and auto, through the main job: all of them
under shrink, and under respawn those with a kill (the recovery policy acts only on a dead process).

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
"""
import pytest

from test_scenarios import ALL, KILLS, assert_clean, main_job, rows_of

pytestmark = pytest.mark.mpi

NEW = ("rd", "rabenseifner", "hier", "auto")
WORLD = 3
ON_THE_EMULATED_DEVICE = ("none", "kill-mid-reduction", "kill-ps-server", "partition-heal")


def scenarios_for(recovery: str) -> list[str]:
    """Under respawn, the scenarios whose schedule kills a process (read from the schedule itself)."""
    from mpibench.faults.scenarios import build

    mine = [s for s in ALL if s not in ON_THE_EMULATED_DEVICE]
    if recovery == "shrink":
        return mine
    return [s for s in mine if any(e.kind == "kill" for e in build(s, WORLD).events)]


def test_respawn_keeps_every_kill_scenario_and_only_those():
    kills = scenarios_for("respawn")
    assert set(KILLS) - set(ON_THE_EMULATED_DEVICE) <= set(kills) and "cascade" in kills
    assert not {"none", "straggler", "partition-minority", "split-brain"} & set(kills)


def test_the_scenarios_left_out_here_run_on_the_emulated_device():
    from test_emulated import MAIN_SCENARIOS

    from mpibench.sync.registry import CHECKED

    assert set(ON_THE_EMULATED_DEVICE) <= set(MAIN_SCENARIOS) and set(NEW) <= set(CHECKED)
    assert set(scenarios_for("shrink")) | set(ON_THE_EMULATED_DEVICE) == set(ALL)


@pytest.mark.parametrize("recovery", ["shrink", "respawn"])
def test_every_scenario_under_the_logarithmic_strategies(tmp_path, recovery):
    scenarios = scenarios_for(recovery)
    job = main_job(tmp_path, WORLD, scenarios, "--recovery", recovery, timeout=900, strategies=NEW)
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
