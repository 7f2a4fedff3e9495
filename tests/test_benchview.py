"""The report's view of bench.csv: every candidate against the blocking call."""
from __future__ import annotations

import pandas as pd

from mpibench.job.bench.rows import bench_row, modelled_row
from mpibench.base.records import BENCH_COLUMNS
from mpibench.results.benchview import section_html, vs_blocking_frame


def _rows(ranks):
    rows = []
    for n in (4096, 1 << 20):
        for name, t, ratio in (("blocking", 2.0, 1.0), ("c_floor", 1.0, 2.0), ("ring", 4.0, 0.5)):
            m = bench_row(name, ranks, n, 3, {"time_min_s": t, "time_avg_s": t, "time_max_s": t, "errors": 0},
                          vs_blocking=ratio)
            rows += [m, modelled_row(m, t / 2 if name == "ring" else t)]
    return pd.DataFrame(rows, columns=BENCH_COLUMNS)


def test_ratios_against_blocking_model_and_c_floor():
    view = vs_blocking_frame(pd.concat([_rows(1), _rows(2)])).set_index(["strategy", "bytes"])
    assert set(view.ranks) == {2}  # p = 1 carries no communication
    ring = view.loc[("ring", 4096)]
    assert ring.vs_blocking == 0.5 and ring.modelled_vs_blocking == 1.0 and ring.vs_c_floor == 0.25
    assert view.loc[("c_floor", 4096)].vs_c_floor == 1.0


def test_section_is_empty_without_ratios_and_has_a_chart_with_them():
    assert section_html(None) == "" and section_html(_rows(1)) == ""
    page = section_html(_rows(2))
    assert "data:image/png;base64," in page and page.count("<tr>") == 1 + 6


def test_a_launches_table_shows_each_ratios_interval_and_verdict():
    rows = _rows(2).assign(vs_blocking_low=lambda f: f.vs_blocking * 0.9,
                           vs_blocking_high=lambda f: f.vs_blocking * 1.1,
                           verdict=lambda f: ["slower" if s == "ring" else "faster" for s in f.strategy])
    page = section_html(rows)
    assert "95 % interval over launches" in page and "[0.45, 0.55]" in page and "<td>slower</td>" in page
    assert "interval over launches" not in section_html(_rows(2))  # one launch: no interval claimed
    assert "come from one launch" in section_html(_rows(2)) and "come from one launch" not in page
