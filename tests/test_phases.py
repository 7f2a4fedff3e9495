"""The main job's phase plan (cases in plan order, then sweep, bench, scaling, report) and its
progress tags (k of N, time so far and left)."""
from dataclasses import dataclass

import pytest

from mpibench.base.config import RunConfig
from mpibench.job.phases import planned, progress_tag


@pytest.mark.parametrize("sweep", [False, True])
@pytest.mark.parametrize("benchmarks", [False, True])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_the_plan_lists_every_case_then_the_later_phases(sweep, benchmarks, n):
    configs = [RunConfig(scenario=f"s{i}", strategy="ring") for i in range(n)]
    phases = planned(configs, sweep, benchmarks)
    assert phases[:n] == [f"{i:03d}-s{i}-ring-shrink" for i in range(n)]
    assert phases[n:] == (["sweep"] if sweep else []) + (["bench", "scaling"] if benchmarks else []) + ["report"]


@dataclass
class Job:
    plan: tuple
    budgeted_from: int | None
    start_time: float = 1000.0


def test_progress_says_k_of_n_and_an_estimate_of_what_is_left():
    job = Job(tuple(range(10)), 4)
    assert progress_tag(job, 0, None, 1000.0) == "[1/4, 0 s so far]"
    assert progress_tag(job, 2, None, 1020.0) == "[3/4, 20 s so far, about 20 s left at this pace]"
    assert progress_tag(job, 5, 1100.0, 1070.0) == "[sweep case 2 of at most 6, 30 s of its budget left]"
    assert progress_tag(Job((1, 2), None), 1, None, 1003.0) == "[2/2, 3 s so far, about 3 s left at this pace]"
