"""Swarm cases: knobs drawn from the seed, within limits, carried by the replay command."""
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from mpibench.drive.cases import replay_command
from mpibench.cli.job_commands import parse_run_args
from mpibench.base.config import RunConfig
from mpibench.job.swarm import BUCKET_BYTES, draw_knobs, registered_strategies
from mpibench.drive.sweep import SweepPlan
from mpibench.sync import STRATEGIES


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**31), workers=st.integers(1, 16))
def test_knobs_are_a_pure_function_of_seed_and_workers_and_stay_valid(seed, workers):
    knobs = draw_knobs(seed, workers, registered_strategies())
    assert knobs == draw_knobs(seed, workers, registered_strategies())
    assert knobs.strategy in STRATEGIES and knobs.recovery in ("shrink", "respawn")
    assert knobs.bucket_bytes in BUCKET_BYTES and 0 <= knobs.ps_shards <= workers + 1
    assert 1 <= knobs.batch_size <= 24 and 8 * workers <= knobs.samples <= 600 and 1 <= knobs.check_every <= 3
    RunConfig(strategy=knobs.strategy, recovery=knobs.recovery, bucket_bytes=knobs.bucket_bytes,
              ps_shards=knobs.ps_shards, batch_size=knobs.batch_size, samples=knobs.samples,
              check_every=knobs.check_every).validate(workers)


def test_a_swarm_covers_every_registered_strategy_both_recoveries_and_the_knob_edges():
    cases = SweepPlan(60, (2, 3, 5, 8), registered_strategies(), 6, swarm=True).cases()
    assert len(cases) == 60 * 4 and len({c.case_id for c in cases}) == len(cases)
    assert {c.strategy for c in cases} == set(STRATEGIES)
    assert {c.recovery for c in cases} == {"shrink", "respawn"}
    knobs = [draw_knobs(c.seed, c.workers, registered_strategies()) for c in cases]
    assert {k.bucket_bytes for k in knobs} == set(BUCKET_BYTES)
    assert {k.check_every for k in knobs} == {1, 2, 3} and min(k.batch_size for k in knobs) == 1
    assert any(k.ps_shards > c.workers for k, c in zip(knobs, cases))  # more shards than members


def test_the_schedule_does_not_depend_on_the_swarm_draw():
    plain = SweepPlan(3, (4,), ("ring",), 8).cases()
    swarm = SweepPlan(3, (4,), ("ring", "ps"), 8, swarm=True).cases()
    assert [c.schedule for c in plain] == [c.schedule for c in swarm]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_replay_command_carries_every_knob(seed, tmp_path):
    case = SweepPlan(1, (5,), registered_strategies(), 6, first_seed=seed, swarm=True).cases()[0]
    knobs = draw_knobs(seed, 5, registered_strategies())
    args = shlex.split(replay_command(["mpirun"], case, tmp_path))
    config, out = parse_run_args(args[args.index("mpibench") + 1:])
    assert (config.strategy, config.recovery, config.seed, config.steps) == (knobs.strategy, knobs.recovery, seed, 6)
    assert (config.bucket_bytes, config.ps_shards, config.batch_size, config.samples, config.check_every) == \
           (knobs.bucket_bytes, knobs.ps_shards, knobs.batch_size, knobs.samples, knobs.check_every)
    assert Path(config.scenario) == tmp_path / "schedule.toml" and Path(out) == tmp_path / "replay"
    assert config.run_parts == ""


def test_endless_plan_streams_seed_after_seed():
    stream = SweepPlan(None, (2, 3), ("ring",), 4, first_seed=5, swarm=True).stream()
    first = [next(stream) for _ in range(6)]
    assert [(c.seed, c.workers) for c in first] == [(5, 2), (5, 3), (6, 2), (6, 3), (7, 2), (7, 3)]
