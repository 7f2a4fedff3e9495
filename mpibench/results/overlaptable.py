"""``bench --profile --launches N``: the overlapped step's figures over launches.

Each launch's steps give one median per figure (a launch's steps share its state: they are not
independent draws); the table has one row per launch, and the summary the median over launches
with its order-statistic interval, the spread a new launch would show."""
from __future__ import annotations

import os

import pandas as pd

from mpibench.base import stats

FIGURES = ("backward_s", "sync_s", "exposed_s", "step_s")
FILE = "overlap.csv"


def launch_medians(folders: list[str]) -> pd.DataFrame:
    """One row per launch folder that holds an overlap.csv: its medians and its error count."""
    rows = []
    for number, folder in enumerate(folders, start=1):
        path = os.path.join(folder, FILE)
        if not os.path.exists(path):
            continue
        steps = pd.read_csv(path)
        row = {"launch": number, "folder": os.path.basename(folder), "steps": len(steps),
               "errors": int(steps.errors.sum())}
        row.update({f: float(steps[f].median()) for f in FIGURES})
        row.update({c: steps[c].iloc[0] for c in ("profile", "policy", "overlap", "ranks", "buckets")})
        rows.append(row)
    return pd.DataFrame(rows)


def summary_lines(table: pd.DataFrame) -> list[str]:
    if table.empty:
        return ["# no launch wrote overlap.csv"]
    head = table.iloc[0]
    parts = []
    for figure in FIGURES:
        got = stats.median_interval(table[figure].tolist())
        parts.append(f"{figure[:-2]} {got.median * 1e3:.2f} ms [{got.low * 1e3:.2f}, {got.high * 1e3:.2f}]")
    return [f"# profile {head.profile}: {head.buckets} {head.policy} bucket(s), overlap "
            f"{'on' if str(head.overlap) == 'True' else 'off'}, {head.ranks} ranks; over {len(table)} launches "
            f"(each the median of its steps) [measured]", ", ".join(parts)]
