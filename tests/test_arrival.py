"""The arrival skew between two ranks: the figure from two ranks' times, and in a real job."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from mpibench.job.arrival import skew_fraction
from mpirun import mpirun_command, run_command

DRIVER = str(Path(__file__).with_name("arrival_driver.py"))


def test_equal_times_have_no_skew():
    assert skew_fraction([1e-3] * 5, [1e-3] * 5) == 0.0


def test_one_rank_slower_by_the_same_time_every_round():
    mine, theirs = np.full(9, 1.0e-3), np.full(9, 1.2e-3)
    assert skew_fraction(mine, theirs) == pytest.approx(0.2e-3 / 1.1e-3)  # over the median of all 18 times


def test_work_that_takes_no_time_has_no_skew():
    assert skew_fraction([0.0, 0.0], [0.0, 0.0]) == 0.0


@given(st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=30), st.floats(1e-3, 1e3))
def test_the_figure_is_symmetric_and_free_of_units(times, scale):
    mine = np.asarray(times)
    theirs = mine[::-1].copy()
    assert skew_fraction(mine, theirs) == pytest.approx(skew_fraction(theirs, mine))
    assert skew_fraction(mine * scale, theirs * scale) == pytest.approx(skew_fraction(mine, theirs), rel=1e-9,
                                                                        abs=1e-12)


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_a_rank_whose_work_is_longer_shows_as_skew_on_every_rank(ranks):
    # Rank 1 sleeps 6 ms where rank 0 sleeps 2: a difference of 4 ms over a median of
    # 2-6 ms. Every rank is handed the same figure; a third rank only waits.
    job = run_command(mpirun_command() + ["-n", str(ranks), sys.executable, DRIVER, "0.002", "0.006"], timeout=120)
    assert job.returncode == 0, job.text
    figures = sorted(line.split() for line in job.stdout.splitlines() if line.startswith("SKEW "))
    assert [int(f[1]) for f in figures] == list(range(ranks))
    values = {float(f[2]) for f in figures}
    assert len(values) == 1
    assert 0.6 <= values.pop() <= 2.2  # 4 ms over a median between 2 and 6 ms (sleeps overshoot)
