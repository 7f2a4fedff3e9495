"""Two benchmark runs compared over their launches: B's time over A's, with an interval and a verdict.

Two runs are two sets of launches, and on a shared host whole launches fall
into states several-fold apart, so one launch against another says nothing a
launch-to-launch difference would not. Given two ``bench --launches N``
folders, each side is the sample of its launches' own figures for a row
(``time_max_s`` of every launch), and the two samples are independent (no
launch belongs to both). B's time over A's is the Hodges-Lehmann estimate on
the log scale (the median of all ``log b_j - log a_i``), and its interval is
the set of shifts that the Mann-Whitney rank test (SciPy's, exact) does not
reject at the confidence asked: the distribution-free interval that goes with
that test.

The verdict answers the regression gate's question, "did B get slower by more
than the threshold?", so unlike ``bench``'s verdict (:func:`.launchstats.three_way`,
which asks whether there is a difference at all) it uses the margin
``compare --threshold`` as the smallest difference that counts: ``slower`` when the whole interval lies above
``1 + margin`` (a regression), ``faster`` when below ``1 / (1 + margin)``,
``indistinguishable`` when inside that band, ``cannot tell`` when it straddles
an edge. With one launch on either side no shift can be rejected and every
verdict is ``cannot tell``.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import pandas as pd

from ..base.stats import shift_ratio
from .launchstats import CANNOT_TELL, CONFIDENCE, FASTER, SAME, SLOWER

LAUNCH_FOLDER = re.compile(r"launch-\d{2,}")


@dataclass(frozen=True)
class LaunchComparison:
    """B's time over A's for one row, over ``a_launches`` and ``b_launches`` launches."""

    ratio: float
    low: float
    high: float
    a_launches: int
    b_launches: int
    verdict: str


def launch_folders(path: str) -> list[str]:
    """The launch folders of a ``bench --launches`` run (each with its bench.csv); [] otherwise."""
    if not os.path.isdir(path):
        return []
    names = sorted(n for n in os.listdir(path) if LAUNCH_FOLDER.fullmatch(n))
    return [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n, "bench.csv"))]


# Header lines a bench launch prints (its stdout.txt): what it ran under, beyond its command.
CONDITION_LINES = {"pages": "# pages: ", "MPI settings": "# MPI settings from the environment: ",
                   "MPI thread level": "# MPI thread level: "}


def conditions(folders: list[str]) -> dict[str, str]:
    """What the first of ``folders`` holding a bench header ran under: its page policy and the
    MPI's settings, as its header said them ({} when no launch kept its output)."""
    for folder in folders:
        try:
            with open(os.path.join(folder, "stdout.txt"), errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            continue
        found = {name: line[len(lead):].strip() for name, lead in CONDITION_LINES.items()
                 for line in lines if line.startswith(lead)}
        if found:
            return found
    return {}


def condition_lines(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """One line per condition both sides recorded and differ in (nothing when they agree)."""
    differ = [name for name in CONDITION_LINES if name in a and name in b and a[name] != b[name]]
    if not differ:
        return []
    return ["A and B ran under different conditions (each moves every row below, whatever the strategies did):",
            *(f"  {name}: A {a[name]}; B {b[name]}" for name in differ)]


def launch_times(folders: list[str], keys: list[str]) -> dict[tuple, list[float]]:
    """Row key -> every launch's measured ``time_max_s`` for that row."""
    times: dict[tuple, list[float]] = {}
    for folder in folders:
        rows = pd.read_csv(os.path.join(folder, "bench.csv"), keep_default_na=False, dtype=str)
        rows = rows[rows.get("tag", "measured") == "measured"]
        for column, value in (("dtype", "float32"), ("in_place", "")):
            if column not in rows.columns:
                rows[column] = value
        rows["in_place"] = rows.in_place.str.lower()
        for column in ("ranks", "bytes", "time_max_s"):
            rows[column] = pd.to_numeric(rows[column], errors="coerce")
        for r in rows.dropna(subset=["ranks", "bytes", "time_max_s"]).to_dict("records"):
            times.setdefault(tuple(r[k] for k in keys), []).append(float(r["time_max_s"]))
    return times


def compare_launches(a_s: list[float], b_s: list[float], margin: float,
                     confidence: float = CONFIDENCE) -> LaunchComparison:
    """B over A from each side's per-launch times (seconds, positive)."""
    shift = shift_ratio(a_s, b_s, confidence)
    if math.isnan(shift.ratio):
        return LaunchComparison(math.nan, math.nan, math.nan, shift.a_n, shift.b_n, CANNOT_TELL)
    low, high = shift.log_low, shift.log_high
    edge = math.log1p(margin)
    verdict = (SLOWER if low > edge else FASTER if high < -edge
               else SAME if -edge <= low and high <= edge else CANNOT_TELL)
    return LaunchComparison(shift.ratio, shift.low, shift.high, shift.a_n, shift.b_n, verdict)
