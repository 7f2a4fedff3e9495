"""The page's model table says what comparison.csv says: each row judged against its own
tolerance (p = 1 and p > 1 differ), the header's count equal to the rows painted, no 'nan'."""
import re

import pandas as pd
import pytest

from mpibench.results.page.bench import comparison_table


def frame(rows):
    return pd.DataFrame([{"kind": "step", "strategy": "ring", "mode": "strong", "ranks": p, "bytes": 1024,
                          "local_batch": 8, "measured_s": 1.0, "modelled_s": 1.0 + err, "tolerance": tol,
                          "cause_codes": codes, "cause": cause} for p, err, tol, codes, cause in rows])


@pytest.mark.parametrize("seed", range(5))
def test_header_count_matches_the_painted_rows_and_each_rows_own_tolerance(seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(12):
        p = int(rng.choice([1, 2, 4]))
        tol = 0.15 if p == 1 else 0.25
        err = float(rng.uniform(-0.5, 0.5))
        off = abs(err) > tol
        rows.append((p, err, tol, "host_busy" if off else float("nan"), "busy" if off else float("nan")))
    html = comparison_table(frame(rows))
    expected = sum(abs(err) > tol for _, err, tol, _, _ in rows)
    assert f"{expected} outside the tolerance" in html
    assert html.count("class='bad'") + html.count('class="bad"') == 2 * expected
    assert "nan" not in re.sub(r"<[^>]+>", " ", html).lower().split()


def test_a_row_within_its_25_percent_is_not_flagged_by_another_rows_15_percent():
    html = comparison_table(frame([(1, 0.05, 0.15, float("nan"), float("nan")),
                                   (2, 0.20, 0.25, float("nan"), float("nan"))]))
    assert "0 outside the tolerance" in html and "15% or 25%" in html
