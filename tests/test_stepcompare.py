"""The step's measured-against-modelled comparison over run folders (mpibench/results/stepcompare.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from mpibench.results import stepcompare
from mpibench.results.costmodel import STEP_PARTS

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "lab" / "studies" / "step_model.py"


def _row(strategy, mode, p, tag, step, parts, load=0.1):
    return {"strategy": strategy, "mode": mode, "ranks": p, "tag": tag, "step_time_s": step,
            "other_load_cores": load, **dict(zip(STEP_PARTS, parts))}


def _folder(tmp_path: Path, name: str, rows) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    pd.DataFrame(rows).to_csv(folder / "scaling.csv", index=False)
    return folder


PARTS = (1e-3, 2e-4, 0.0, 1e-4, 1e-5, 3e-4)


def test_a_point_within_its_tolerance_holds_and_one_outside_names_its_widest_part(tmp_path):
    folder = _folder(tmp_path, "a", [
        _row("ring", "strong", 1, "measured", 1.0e-3, PARTS), _row("ring", "strong", 1, "modelled", 1.1e-3, PARTS),
        _row("ring", "strong", 2, "measured", 2.0e-3, PARTS),
        _row("ring", "strong", 2, "modelled", 1.0e-3, PARTS[:5] + (0.0,)),
        _row("ring", "strong", 4, "measured", 9.0, PARTS), _row("ring", "strong", 4, "modelled", 1.0, PARTS)])
    points = stepcompare.read_folder(str(folder), max_ranks=2).points
    assert [(p.ranks, p.holds) for p in points] == [(1, True), (2, False)]  # p = 4 left out
    assert points[0].error("step_time_s") == pytest.approx(0.1)
    assert points[1].widest_part() == ("wait_s", 3e-4, 0.0)
    assert "MISS: wait 0.300/0.000 ms" in stepcompare.table(points)


@pytest.mark.parametrize("p, limit", [(1, 0.15), (2, 0.25), (3, 0.25)])
def test_tolerance_by_rank_count(p, limit):
    assert stepcompare.tolerance(p) == limit


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(1e-5, 1e-1), min_size=1, max_size=6), seed=st.integers(0, 2**32 - 1))
def test_the_median_over_folders_is_the_median_of_each_figure(tmp_path_factory, values, seed):
    rng = np.random.default_rng(seed)
    tmp = tmp_path_factory.mktemp("f")
    folders = []
    for i, v in enumerate(values):
        model = float(rng.uniform(1e-5, 1e-1))
        folders.append(stepcompare.read_folder(str(_folder(tmp, str(i), [
            _row("ps", "weak", 2, "measured", v, PARTS), _row("ps", "weak", 2, "modelled", model, PARTS)])), 2))
    [point] = stepcompare.median_points(folders)
    assert point.measured["step_time_s"] == pytest.approx(float(np.median(values)))
    assert point.folders == len(values)


def test_a_point_without_its_model_twin_never_holds(tmp_path):
    folder = _folder(tmp_path, "a", [_row("ps", "weak", 1, "measured", 1e-3, PARTS)])
    [point] = stepcompare.read_folder(str(folder), 2).points
    assert not point.holds and "n/a" in stepcompare.table([point])


def _script(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_the_script_exits_by_the_goal_and_on_bad_input(tmp_path):
    good = _folder(tmp_path, "good", [_row("ring", "weak", 2, "measured", 1e-3, PARTS),
                                      _row("ring", "weak", 2, "modelled", 1.2e-3, PARTS)])
    bad = _folder(tmp_path, "bad", [_row("ring", "weak", 2, "measured", 1e-3, PARTS),
                                    _row("ring", "weak", 2, "modelled", 2e-3, PARTS)])
    assert _script(good).returncode == 0
    done = _script(good, bad, bad)
    assert done.returncode == 1 and "median over 3 folder(s)" in done.stdout
    assert "1 of 1" not in done.stdout and "0 of 1 points hold" in done.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = _script(empty)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    old = _folder(tmp_path, "old", [{"strategy": "ring", "mode": "weak", "ranks": 2, "tag": "measured",
                                     "step_time_s": 1e-3}])
    assert _script(old).returncode == 2
    only_big = _folder(tmp_path, "big", [_row("ring", "weak", 4, "measured", 1e-3, PARTS)])
    assert _script(only_big).returncode == 3


def test_the_script_calls_each_point_over_launches(tmp_path):
    """Six launches: a point measured at half its model in every one is flagged, one within the band
    in every one agrees, and one on both sides of the band's edge cannot be resolved."""
    folders = []
    for i, (far, near, wide) in enumerate(zip([0.5] * 6, [1.0, 1.05, 0.95, 1.02, 0.98, 1.0],
                                              [0.7, 1.0, 1.3, 0.9, 1.1, 1.0])):
        folders.append(_folder(tmp_path, f"launch-{i}", [
            _row("ring", "weak", 2, "measured", 1e-3 * far, PARTS), _row("ring", "weak", 2, "modelled", 1e-3, PARTS),
            _row("ps", "weak", 2, "measured", 1e-3 * near, PARTS), _row("ps", "weak", 2, "modelled", 1e-3, PARTS),
            _row("auto", "weak", 2, "measured", 1e-3 * wide, PARTS), _row("auto", "weak", 2, "modelled", 1e-3, PARTS)]))
    done = _script(*folders)
    lines = {line.split()[0]: line for line in done.stdout.split("over 6 launch(es)")[1].splitlines()[2:] if line}
    assert "flagged: faster than the model" in lines["ring"]
    assert "agrees" in lines["ps"]
    assert "cannot resolve at this noise" in lines["auto"]


def _launches(tmp_path, name, ratios):
    return [stepcompare.read_folder(str(_folder(tmp_path, f"{name}-{i}", [
        _row("ring", "weak", 2, "measured", 1e-3 * r, PARTS), _row("ring", "weak", 2, "modelled", 1e-3, PARTS)])), 2)
        for i, r in enumerate(ratios)]


@pytest.mark.parametrize("ratios, kind", [([0.5] * 6, "flagged: faster than the model"),
                                          ([2.0] * 6, "flagged: slower than the model"),
                                          ([1.0, 1.05, 0.95, 1.02, 0.98, 1.0], "agrees"),
                                          ([0.7, 1.0, 1.3, 0.9, 1.1, 1.0], "cannot resolve"),
                                          ([0.5] * 5, "too few launches"),  # 93.75 % coverage: no flag
                                          ([1.0] * 3, "too few launches")])
def test_a_point_is_called_over_launches_only_at_the_stated_confidence(tmp_path, ratios, kind):
    [call] = stepcompare.point_calls(_launches(tmp_path, "j", ratios))
    assert call.kind == kind and call.ratio.n == len(ratios)
    assert (call.band_low, call.band_high) == pytest.approx((1 / 1.25, 1 / 0.75))


def test_jobs_agree_only_where_every_job_makes_the_same_call(tmp_path):
    jobs = {"1": stepcompare.point_calls(_launches(tmp_path, "a", [0.5] * 6)),
            "2": stepcompare.point_calls(_launches(tmp_path, "b", [0.55] * 6)),
            "3": stepcompare.point_calls(_launches(tmp_path, "c", [0.7, 1.0, 1.3, 0.9, 1.1, 1.0]))}
    [row] = stepcompare.agreement(jobs)
    assert (row["call_1"], row["call_3"], row["same_call"], row["all_agree"]) == (
        "flagged: faster than the model", "cannot resolve", 2, False)
    [row] = stepcompare.agreement({k: jobs[k] for k in ("1", "2")})
    assert row["all_agree"] and row["jobs"] == 2


def test_launching_needs_an_out_folder_and_writing_a_job_name():
    for args in (["--launches", "2"], ["--launches", "2", "--out", "x", "--write"]):
        done = _script(*args)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
