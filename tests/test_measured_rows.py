"""A measured table keeps every condition's rows; a new set replaces only its own condition's."""
from __future__ import annotations

import pandas as pd

from mpibench.results.measured_rows import replace_rows


def test_a_new_set_replaces_the_rows_of_its_own_conditions_only(tmp_path):
    path = tmp_path / "table.csv"
    pd.DataFrame({"x": [1, 2, 3], "pages": ["4k", "4k", "system"]}).to_csv(path, index=False)
    new = pd.DataFrame({"x": [9], "pages": ["4k"], "level": ["single"]})
    got = replace_rows(path, new, {"pages": "system", "level": "multiple"})
    # the old rows predate "level": they count as multiple, so none is of the new set's condition
    assert sorted(zip(got.x, got.pages, got.level)) == [
        (1, "4k", "multiple"), (2, "4k", "multiple"), (3, "system", "multiple"), (9, "4k", "single")]
    got.to_csv(path, index=False)
    again = replace_rows(path, new.assign(x=7), {"pages": "system", "level": "multiple"})
    assert sorted(zip(again.x, again.level)) == [(1, "multiple"), (2, "multiple"), (3, "multiple"), (7, "single")]


def test_no_table_yet_is_the_new_set(tmp_path):
    new = pd.DataFrame({"x": [1], "pages": ["4k"]})
    assert replace_rows(tmp_path / "none.csv", new, {"pages": "system"}) is new


def test_a_table_wholly_replaced_is_the_new_set(tmp_path):
    path = tmp_path / "table.csv"
    pd.DataFrame({"x": [1, 2], "pages": ["4k", "4k"]}).to_csv(path, index=False)
    new = pd.DataFrame({"x": [5], "pages": ["4k"]})
    assert replace_rows(path, new, {"pages": "system"}).x.tolist() == [5]
