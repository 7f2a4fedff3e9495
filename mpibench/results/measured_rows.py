"""Rows of a measured table (lab/data/*.csv) replaced by a new set measured under the same
conditions, the rows of other conditions kept beside them."""
from __future__ import annotations

from pathlib import Path

import pandas as pd


def replace_rows(path: Path, new: pd.DataFrame, conditions: dict[str, str]) -> pd.DataFrame:
    """``new`` in place of the rows of ``path`` whose ``conditions`` columns hold ``new``'s values;
    the others kept. ``conditions``: column -> the value of rows written before that column existed."""
    if not path.exists():
        return new
    old = pd.read_csv(path, keep_default_na=False)
    same = pd.Series(True, index=old.index)
    for column, before in conditions.items():
        if column not in old.columns:
            old[column] = before
        same &= old[column].astype(str) == str(new[column].iloc[0])
    kept = old[~same]
    return pd.concat([kept, new], ignore_index=True) if len(kept) else new
