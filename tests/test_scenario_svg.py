"""The hand-drawn scenario chart: lines break exactly at uncommitted steps; ticks are round and in range."""
from __future__ import annotations

import math

from hypothesis import given, settings, strategies as st

from mpibench.results import scenario_svg
from mpibench.results.svgaxes import Scale, nice_ticks


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 60), min_size=1))
def test_a_line_has_one_sub_path_per_run_of_committed_steps(steps):
    steps = sorted(steps)
    groups = scenario_svg.runs(steps)
    expected = 1 + sum(1 for a, b in zip(steps, steps[1:]) if b != a + 1)
    assert len(groups) == expected
    d = scenario_svg.path([float(s) for s in steps], [1.0] * len(steps), groups)
    assert d.count("M") == expected  # never bridged
    gaps = scenario_svg.spans([s for s in range(steps[-1] + 1) if s not in steps])
    assert len(gaps) == expected - 1 + (steps[0] > 0)


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(1e-6, 1e6))
def test_ticks_are_increasing_inside_the_range_and_few(lo, width):
    ticks = nice_ticks(lo, lo + width, 4)
    assert 1 <= len(ticks) <= 11
    assert all(lo - 1e-9 * max(1, abs(lo)) <= t <= lo + width + 1e-9 * max(1, abs(lo) + width) for t in ticks)
    assert ticks == sorted(ticks)


def test_scale_maps_ends_to_ends_and_survives_a_flat_range():
    s = Scale(0, 10, 100, 200)
    assert (s(0), s(10), s(5)) == (100, 200, 150)
    flat = Scale(3, 3, 0, 10)
    assert math.isfinite(flat(3)) and 0 <= flat(3) <= 10


def test_a_fault_without_a_phase_is_titled_without_nan():
    import pandas as pd

    from mpibench.results.scenario_svg import fault_marks

    faults = pd.DataFrame([{"scenario": "p", "strategy": "ring", "step": 1, "phase": float("nan"), "rank": "5 6 7",
                            "kind": "partition", "detail": "sides 0 1 2 3 4 | 5 6 7"},
                           {"scenario": "p", "strategy": "ring", "step": 2, "phase": "mid_reduction", "rank": "3",
                            "kind": "kill", "detail": ""}])
    svg = fault_marks(faults, lambda step: 10.0 * step)
    assert "nan" not in svg
    assert "step 1: partition (rank 5 6 7)" in svg and "step 2: kill (rank 3 mid_reduction)" in svg
