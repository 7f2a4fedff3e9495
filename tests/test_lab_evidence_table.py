"""The lab's evidence-cost table (lab/findings.md; README's until the lab left the product) is the one
lab/studies/check_overhead.py writes from its CSV."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lab" / "studies"))
import check_overhead  # noqa: E402

CSV = ROOT / "lab" / "data" / "evidence_cost.csv"


def test_the_findings_show_the_measured_curve_as_written():
    frame = pd.read_csv(CSV, keep_default_na=False)
    text = (ROOT / "lab" / "findings.md").read_text()
    assert check_overhead.with_curve(text, frame) == text, "lab/findings.md's table differs from evidence_cost.csv"
    assert len(frame) >= 4 and text.count("| history only |") == 1


def test_the_block_is_replaced_whole_and_the_rest_kept():
    frame = pd.DataFrame([{"parameters": 676, "batch": 16, "step_off_ms": 0.2, "history_cost": 1.5,
                           "history_cost_low": 1.2, "history_cost_high": 2.0, "with_check_cost": 2.5,
                           "with_check_cost_low": 2.0, "with_check_cost_high": 3.0}])
    text = f"before\n{check_overhead.BEGIN}\nstale\n{check_overhead.END}\nafter\n"
    got = check_overhead.with_curve(text, frame)
    assert got.startswith("before\n") and got.endswith("after\n") and "stale" not in got
    assert "| 676 | 16 | 0.20 | 1.50x [1.20, 2.00] | 2.50x [2.00, 3.00] |" in got


def test_a_page_without_the_block_is_refused():
    with pytest.raises(SystemExit):
        check_overhead.with_curve("no markers here\n", pd.DataFrame())


def test_a_size_checked_with_a_stride_shows_no_online_check_figure():
    frame = pd.DataFrame([{"parameters": 266500, "batch": 256, "step_off_ms": 12.0, "history_cost": 1.05,
                           "history_cost_low": 1.01, "history_cost_high": 1.08, "with_check_cost": 1.06,
                           "with_check_cost_low": 1.02, "with_check_cost_high": 1.09, "check_every": 1000000}])
    got = check_overhead.curve_table(frame)
    assert "| 266,500 | 256 | 12.00 | 1.05x [1.01, 1.08] | not measured (checked every 1000000 steps) |" in got
