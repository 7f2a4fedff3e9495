"""Two benchmark runs side by side: the before/after check for a network or library change.

``python -m mpibench compare A B`` reads the measured rows of two
``bench.csv`` files (or the run folders holding them) and matches them by
strategy, ranks, bytes, dtype and placement. Per matched row it reports B's
time over A's (``time_max_s``, the median over rounds) and whether the
difference is beyond noise: larger than the spread each run measured for that
row (the larger of p90 - median over rounds and the rounds' standard
deviation, cv% x median). A row **regressed** when B is slower by more than
the threshold *and* beyond noise; any regression makes the exit status 1.
Files written before the round columns existed have no spread: their rows
are judged on the threshold alone, and the table says so.

That judgement is one launch against one launch, and on a host whose launches
land in different states it cannot tell a launch-to-launch difference from a
regression; the printout says so. Given ``bench --launches N`` folders, the
comparison is over launches instead (:mod:`.launchcompare`): B over A with a
95 % interval and a verdict per row, ``slower`` beyond ``--threshold`` being
the regression (exit 1).

Either way, when the two runs' recorded machines differ (:mod:`.machines`) one
line before the table says so and every row of ``--out`` carries it in its
``machines`` column; the exit status does not change, since a change of MPI
library or network is itself one of the things compared.
"""
from __future__ import annotations

import math
import os

import pandas as pd

from mpibench.base import stats
from mpibench.base.config import UsageError

from .launchcompare import compare_launches, condition_lines, conditions, launch_folders, launch_times
from .launchstats import CANNOT_TELL, FASTER, SLOWER
from .machines import machines_line

KEYS = ["strategy", "ranks", "bytes", "dtype", "in_place"]
DEFAULTS = {"dtype": "float32", "in_place": ""}
COLUMNS = ["strategy", "ranks", "bytes", "dtype", "in_place", "a_time_s", "b_time_s", "ratio",
           "a_spread_s", "b_spread_s", "beyond_noise", "regressed", "improved", "verdict"]


def bench_file(path: str) -> str:
    file = os.path.join(path, "bench.csv") if os.path.isdir(path) else path
    if not os.path.isfile(file):
        raise UsageError(f"no bench.csv at {path}: compare reads benchmark folders (from 'bench' or the main "
                         "job), not a single run's")
    return file


def read_measured(path: str) -> pd.DataFrame:
    """The measured rows of one run, one per key; bad input -> UsageError."""
    file = bench_file(path)
    try:
        frame = pd.read_csv(file, keep_default_na=False, dtype=str)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        raise UsageError(f"{file} is not a readable CSV") from None
    need = {"strategy", "ranks", "bytes", "time_max_s", "tag"}
    if not need <= set(frame.columns):
        raise UsageError(f"{file} is not a bench.csv (missing {', '.join(sorted(need - set(frame.columns)))})")
    for column, value in DEFAULTS.items():
        if column not in frame.columns:
            frame[column] = value
    frame = frame[frame.tag == "measured"].copy()
    frame["in_place"] = frame.in_place.str.lower()  # "true" as written, "True" after a pandas round trip
    for column in ("ranks", "bytes", "time_max_s"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    if frame.empty or frame[["ranks", "bytes", "time_max_s"]].isna().any().any():
        raise UsageError(f"{file} has no measured rows with numeric ranks, bytes and time_max_s")
    frame["spread_s"] = [spread_s(r) for r in frame.to_dict("records")]
    return frame.drop_duplicates(KEYS, keep="last").set_index(KEYS)


def spread_s(row: dict) -> float:
    """The noise one run measured for one row (seconds); NaN when the file has no rounds."""
    median = float(row["time_max_s"])
    p90 = pd.to_numeric(row.get("round_p90_s", ""), errors="coerce")
    cv = pd.to_numeric(row.get("round_cv_pct", ""), errors="coerce")
    if pd.isna(p90) and pd.isna(cv):
        return math.nan
    return max(0.0 if pd.isna(p90) else float(p90) - median, 0.0 if pd.isna(cv) else float(cv) / 100 * median)


def host_load(path: str) -> float | None:
    """Cores other processes kept busy during the run's calibration (its run.json), if recorded."""
    import json

    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    try:
        with open(os.path.join(folder, "run.json")) as fh:
            value = (json.load(fh).get("calibration") or {}).get("other_load_cores")
    except (OSError, ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, threshold: float) -> pd.DataFrame:
    rows = []
    for key in a.index.intersection(b.index):
        ta, tb = float(a.loc[key, "time_max_s"]), float(b.loc[key, "time_max_s"])
        sa, sb = float(a.loc[key, "spread_s"]), float(b.loc[key, "spread_s"])
        ratio = tb / ta if ta > 0 else math.inf
        known = not (math.isnan(sa) or math.isnan(sb))
        beyond = abs(tb - ta) > max(sa, sb) if known else None
        regressed = ratio > 1 + threshold and beyond is not False
        improved = ratio < 1 / (1 + threshold) and beyond is not False
        verdict = ("regressed" if regressed else "improved" if improved
                   else "within noise" if beyond is False else "within threshold")
        rows.append({**dict(zip(KEYS, key)), "a_time_s": ta, "b_time_s": tb, "ratio": ratio,
                     "a_spread_s": sa, "b_spread_s": sb, "beyond_noise": beyond, "regressed": regressed,
                     "improved": improved, "verdict": verdict + ("" if known else " (no spread recorded)")})
    return pd.DataFrame(rows, columns=COLUMNS).sort_values(["strategy", "ranks", "bytes"], kind="stable")


def table_lines(table: pd.DataFrame, only_a: list, only_b: list) -> list[str]:
    from mpibench.base.units import human_bytes

    lines = [f"{'strategy':<12} {'p':>3} {'size':>10} {'dtype':<8} {'A us':>10} {'B us':>10} "
             f"{'B/A':>6}  verdict"]
    for r in table.itertuples(index=False):
        lines.append(f"{r.strategy:<12} {int(r.ranks):>3} {human_bytes(int(r.bytes)):>10} {r.dtype:<8} "
                     f"{r.a_time_s * 1e6:10.1f} {r.b_time_s * 1e6:10.1f} {r.ratio:6.2f}  {r.verdict}")
    for side, keys in (("A", only_a), ("B", only_b)):
        if keys:
            lines.append(f"only in {side}: " + ", ".join(f"{k[0]} p={k[1]} {human_bytes(int(k[2]))}" for k in keys))
    return lines


def compare_command(path_a: str, path_b: str, threshold: float, out: str | None) -> int:
    """Print the table; 1 on a regression, 0 otherwise (bad input raises UsageError: exit 2)."""
    if not threshold >= 0:
        raise UsageError(f"--threshold must be a fraction >= 0 (got {threshold})")
    if out is not None and os.path.exists(out):
        raise UsageError(f"{out} exists; compare never overwrites a file")
    if launch_folders(path_a) or launch_folders(path_b):
        return compare_launch_runs(path_a, path_b, threshold, out)
    a, b = read_measured(path_a), read_measured(path_b)
    table = compare_runs(a, b, threshold)
    if table.empty:
        raise UsageError("the two runs share no (strategy, ranks, bytes, dtype, placement) row")
    only_a = [k for k in a.index if k not in b.index]
    only_b = [k for k in b.index if k not in a.index]
    machines = say_machines(path_a, path_b)
    for line in table_lines(table, only_a, only_b):
        print(line)
    loads = [host_load(path) for path in (path_a, path_b)]
    if any(load is not None for load in loads):
        a_load, b_load = ("unknown" if x is None else f"{x:.1f} cores" for x in loads)
        print(f"other processes' load while calibrating: A {a_load}, B {b_load} "
              "(a difference here moves every row; the spread over rounds does not cover it)")
    regressions = int(table.regressed.sum())
    print(f"{regressions} regression(s) beyond {threshold:.0%} and beyond both runs' spread; "
          f"{int(table.improved.sum())} improvement(s); {len(table)} rows compared")
    print("one launch on each side: a row's verdict says this pair of launches differs beyond the "
          "spread each measured, which a launch-to-launch difference of the host can do as well; "
          "compare two bench --launches N folders for a verdict over launches")
    write_table(table, out, machines)
    return 1 if regressions else 0


def say_machines(path_a: str, path_b: str) -> str:
    """Print the machines line when there is one (different, or unknown) and return it."""
    line = machines_line(path_a, path_b)
    if line:
        print(line)
    return line


def write_table(table: pd.DataFrame, out: str | None, machines: str) -> None:
    """``--out``: the table as CSV, every row with the machines line ("" for the same machine)."""
    if out is not None:
        table.assign(machines=machines).to_csv(out, index=False)


def _sides(path: str) -> list[str]:
    """A run's launches: the folders of a ``bench --launches`` run, or the one run itself."""
    folders = launch_folders(path)
    return folders or [os.path.dirname(os.path.abspath(bench_file(path)))]


def compare_launch_runs(path_a: str, path_b: str, threshold: float, out: str | None) -> int:
    """B over A per row over the launches of each side (:mod:`.launchcompare`); 1 when a row is
    slower beyond ``threshold`` over the launches, 0 otherwise."""
    from mpibench.base.units import human_bytes

    sides = [_sides(p) for p in (path_a, path_b)]
    a, b = (launch_times(folders, KEYS) for folders in sides)
    keys = [k for k in a if k in b]
    if not keys:
        raise UsageError("the two runs share no (strategy, ranks, bytes, dtype, placement) row")
    rows, lines = [], [f"{'strategy':<12} {'p':>3} {'size':>10} {'A us':>10} {'B us':>10} {'B/A':>6} "
                       f"{'95 % interval':>15} {'launches':>9}  verdict"]
    for key in sorted(keys, key=lambda k: (k[0], k[1], k[2])):
        got = compare_launches(a[key], b[key], threshold)
        ta, tb = stats.median(a[key]), stats.median(b[key])
        rows.append({**dict(zip(KEYS, key)), "a_launches": got.a_launches, "b_launches": got.b_launches,
                     "a_time_s": ta, "b_time_s": tb, "ratio": got.ratio, "ratio_low": got.low,
                     "ratio_high": got.high, "regressed": got.verdict == SLOWER,
                     "improved": got.verdict == FASTER, "verdict": got.verdict})
        lines.append(f"{key[0]:<12} {int(key[1]):>3} {human_bytes(int(key[2])):>10} {ta * 1e6:10.1f} "
                     f"{tb * 1e6:10.1f} {got.ratio:6.2f} {f'[{got.low:.2f}, {got.high:.2f}]':>15} "
                     f"{f'{got.a_launches}/{got.b_launches}':>9}  {got.verdict}")
    table = pd.DataFrame(rows)
    machines = say_machines(path_a, path_b)
    print("\n".join(lines + condition_lines(*(conditions(folders) for folders in sides))))
    regressions = int(table.regressed.sum())
    print(f"{regressions} row(s) slower beyond {threshold:.0%} over the launches, {int(table.improved.sum())} "
          f"faster, {int((table.verdict == CANNOT_TELL).sum())} cannot tell; B/A is the Hodges-Lehmann estimate "
          f"with its 95 % Mann-Whitney interval; {len(table)} rows compared")
    write_table(table, out, machines)
    return 1 if regressions else 0
