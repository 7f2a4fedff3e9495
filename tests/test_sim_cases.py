"""A case's run arguments read into the same config the real command builds (mpibench.sim.cases)."""
from __future__ import annotations

from pathlib import Path

import pytest

from mpibench.base.config import UsageError
from mpibench.cli.job_commands import parse_run_args
from mpibench.drive.sweep import SweepPlan
from mpibench.sim.cases import config_of, sim_replay


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_swarm_case_arguments_give_the_config_the_real_run_command_gives(seed, tmp_path):
    for case in SweepPlan(1, (2, 5), ("ring", "ps", "auto"), 6, seed, (), True).cases():
        args = case.run_args(tmp_path / "schedule.toml", tmp_path / "out")
        real, out = parse_run_args(args)
        simulated, sim_out = config_of(args)
        assert simulated == real and sim_out == out


@pytest.mark.parametrize("args", [["run", "--no-such", "1"], ["run", "--steps"], ["run", "--steps", "x"],
                                  ["bench"]])
def test_bad_case_arguments_are_usage_errors(args):
    with pytest.raises(UsageError):
        config_of(args)


def test_the_replay_runs_the_case_on_the_simulator():
    case = SweepPlan(1, (3,), ("ring",), 4).cases()[0]
    line = sim_replay(case, Path("/x"))
    assert "--engine sim --ranks 3" in line and "--scenario /x/schedule.toml" in line
