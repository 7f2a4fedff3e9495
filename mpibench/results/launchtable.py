"""``bench --launches N``'s tables: every launch's own folder read back and combined.

Each launch folder holds that launch's ``bench.csv`` (its ``vs_blocking`` is already
paired: the median over its interleaved rounds of blocking / candidate from the same
round), ``fingerprint.csv`` and, with the model on, ``comparison.csv``. Combined here,
per (strategy, ranks, bytes): every figure the median over launches, ``time_max_s``
and ``vs_blocking`` with their order-statistic intervals, the comparison's verdict
(:mod:`.launchstats`), its median in each launch state, and the model's call on the
per-launch measured / modelled ratio against the model's tolerance band.
"""
from __future__ import annotations

import math
import os

import pandas as pd

from . import launchstats as ls

# bench.csv's columns come first, unchanged; these follow
INTERVAL_COLUMNS = ["launches", "confidence_pct", "time_max_s_low", "time_max_s_high", "vs_blocking_low",
                    "vs_blocking_high", "verdict", "clusters", "bimodal_p", "by_state", "by_size_state", "model_ratio_low",
                    "model_ratio_high", "model_call", "margin_pct", "resolution_pct"]
LAUNCH_COLUMNS = ["launch", "folder", "exit", "wall_s", "load_before", "pingpong_1mib_s", "memcpy_gbps",
                  "add_gbps", "state", "mpi_settings"]
MEDIAN_COLUMNS = ["time_min_s", "time_avg_s", "time_max_s", "algbw_gbps", "busbw_gbps", "round_p90_s",
                  "round_cv_pct", "vs_blocking", "model_ratio"]
KEY = ["strategy", "ranks", "bytes"]
DEFAULT_TOLERANCE = 0.25  # results.compare.TOLERANCE: |modelled - measured| / measured


def _read(path: str) -> pd.DataFrame | None:
    try:
        return pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError):
        return None


def read_launches(folders: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every launch's bench rows with a ``launch`` column, one fingerprint row per launch)."""
    rows, prints = [], []
    for i, folder in enumerate(folders, start=1):
        bench = _read(os.path.join(folder, "bench.csv"))
        if bench is not None:
            bench = bench.assign(launch=i)
            cmp = _read(os.path.join(folder, "comparison.csv"))
            tol = (cmp.set_index(KEY)["tolerance"] if cmp is not None and len(cmp) else None)
            if tol is not None:
                tol = tol[~tol.index.duplicated()]
                bench["tolerance"] = [tol.get(tuple(k), math.nan) for k in bench[KEY].itertuples(index=False)]
            rows.append(bench)
        fp = _read(os.path.join(folder, "fingerprint.csv"))
        prints.append({"launch": i, **(fp.iloc[0].to_dict() if fp is not None and len(fp) else {})})
    return (pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()), pd.DataFrame(prints)


def states(prints: pd.DataFrame) -> dict[int, str]:
    """launch -> its state (fast / slow, or one), clustered on the 1 MiB ping-pong."""
    if "pingpong_1mib_s" not in prints or prints.pingpong_1mib_s.isna().any():
        return {int(n): "unknown" for n in prints.get("launch", [])}
    named = ls.launch_states(list(prints.pingpong_1mib_s))
    return dict(zip(prints.launch.astype(int), named))


def size_states(measured: pd.DataFrame) -> dict[tuple[int, int], dict[int, str]]:
    """(ranks, bytes) -> {launch: state}: the launches clustered on the blocking call's own
    time at that size. A size can have launch states of its own that the fingerprint misses:
    at 64 KiB the blocking call took 12 us in some launches and 20-45 us in others, and the
    strategies' ratios moved with it, while the 1 MiB ping-pong put every launch in one state."""
    base = measured[measured.strategy == "blocking"]
    return {(int(r), int(b)): dict(zip(g.launch.astype(int), ls.launch_states(list(g.time_max_s))))
            for (r, b), g in base.groupby(["ranks", "bytes"])}


def _by_state(group: pd.DataFrame, state_of: dict[int, str]) -> str:
    parts = []
    named = [state_of.get(int(n), "unknown") for n in group.launch]
    for state in dict.fromkeys(named):
        mine = group[[s == state for s in named]].vs_blocking.dropna()
        if len(mine):
            parts.append(f"{state} {mine.median():.2f}x ({len(mine)})")
    return ", ".join(parts)


def _model(group: pd.DataFrame, modelled: pd.DataFrame) -> tuple[float, float, float, str]:
    """(median, low, high of the per-launch measured / modelled ratio; the model's call)."""
    twins = modelled.merge(group[["launch"]], on="launch")
    ratios = twins.model_ratio.dropna()
    if ratios.empty:
        return math.nan, math.nan, math.nan, ""
    tol = float(group.tolerance.dropna().median()) if "tolerance" in group and group.tolerance.notna().any() \
        else DEFAULT_TOLERANCE
    interval = ls.median_interval(list(ratios))
    # within <=> |modelled - measured| / measured <= tol <=> measured / modelled in [1/(1+tol), 1/(1-tol)]
    high = 1 / (1 - tol) if tol < 1 else math.inf
    return interval.median, interval.low, interval.high, ls.model_call(interval, 1 / (1 + tol), high)


def combine(rows: pd.DataFrame, state_of: dict[int, str], columns: list[str]) -> pd.DataFrame:
    """One row per measured (strategy, ranks, bytes): ``columns`` (bench.csv's) then INTERVAL_COLUMNS."""
    if rows.empty:
        return pd.DataFrame(columns=columns + INTERVAL_COLUMNS)
    measured, modelled = rows[rows.tag == "measured"], rows[rows.tag == "modelled"]
    by_size = size_states(measured)
    out = []
    for key, group in measured.groupby(KEY, sort=False):
        row = {c: group[c].iloc[0] if c in group else None for c in columns}
        for c in MEDIAN_COLUMNS:
            if c in group and pd.api.types.is_numeric_dtype(group[c]) and group[c].notna().any():
                row[c] = float(group[c].median())
        if "errors" in group and group.errors.notna().any():
            row["errors"] = int(group.errors.sum())
        times = ls.median_interval(list(group.time_max_s))
        row.update(launches=len(group), confidence_pct=round(times.coverage * 100, 1),
                   time_max_s_low=times.low, time_max_s_high=times.high)
        if key[0] != "blocking" and group.vs_blocking.notna().any():
            v = ls.compare(list(group.vs_blocking.dropna()))
            row.update(vs_blocking_low=v.ratio.low, vs_blocking_high=v.ratio.high, verdict=v.verdict,
                       clusters=" / ".join(f"{c:.2f}x" for c in v.clusters), bimodal_p=v.bimodal_p,
                       by_state=_by_state(group, state_of),
                       by_size_state=_by_state(group, by_size.get((int(key[1]), int(key[2])), {})),
                       margin_pct=round(v.margin * 100, 1),
                       resolution_pct=v.resolution_pct)
        mine = modelled[(modelled.strategy == key[0]) & (modelled.ranks == key[1]) & (modelled.bytes == key[2])]
        ratio, low, high, call = _model(group, mine)
        row.update(model_ratio=ratio, model_ratio_low=low, model_ratio_high=high, model_call=call)
        out.append(row)
    return pd.DataFrame(out, columns=columns + INTERVAL_COLUMNS)


SHORT = {ls.FASTER: "faster", ls.SLOWER: "slower", ls.SAME: "indist.", ls.BIMODAL: "bimodal", ls.TOO_FEW: "too few",
         ls.CANNOT_TELL: "can't tell"}
MIN_CELL = 26
MAX_MODEL_LINES = 8


def cell_text(rows: pd.DataFrame) -> str:
    """One candidate's cell at one size: verdict, median paired ratio and its interval; '-' if not run."""
    if rows.empty:
        return "-"
    r = rows.iloc[0]
    return f"{SHORT.get(r.verdict, r.verdict)} {r.vs_blocking:.2f}x [{r.vs_blocking_low:.2f},{r.vs_blocking_high:.2f}]"


def verdict_lines(table: pd.DataFrame) -> list[str]:
    """The verdict table as printed: one line per candidate, one cell per size (verdict, median
    paired ratio blocking / candidate, its interval; indist. = indistinguishable within the
    margin), then a line stating the margin and the confidence."""
    from mpibench.base.units import human_bytes

    compared = table[table.verdict.notna()] if "verdict" in table else table.iloc[0:0]
    if compared.empty:
        return ["# no comparison against blocking"]
    sizes = sorted(compared.bytes.unique())
    rows = [(name, [cell_text(group[group.bytes == n]) for n in sizes])
            for name, group in compared.groupby("strategy", sort=False)]
    # Every cell at least two spaces from the one before, however long its text.
    width = max([MIN_CELL] + [len(text) + 2 for _, cells in rows for text in cells])
    first = max([14] + [len(str(name)) for name, _ in rows])
    lines = [f"{'vs blocking':<{first}}" + "".join(f"{human_bytes(int(n)):>{width}}" for n in sizes)]
    lines += [f"{name:<{first}}" + "".join(text.rjust(width) for text in cells) for name, cells in rows]
    lines.append(f"# verdicts at {ls.CONFIDENCE:.0%} confidence against a margin of ±{ls.MARGIN:.0%}: indist. = "
                 f"the ratio's interval lies within [{ls.band()[0]:.3f}, {ls.band()[1]:.3f}]; otherwise faster / "
                 f"slower = wholly above / below 1; can't tell = it holds 1")
    return lines


def model_lines(table: pd.DataFrame) -> list[str]:
    """One line: how many points the model agrees with, flags, or cannot resolve; then each flag."""
    if "model_call" not in table or not table.model_call.fillna("").astype(bool).any():
        return []
    from mpibench.base.units import human_bytes

    calls = table.model_call.fillna("")
    agree, flagged = int((calls == "agrees").sum()), calls.str.startswith("flagged")
    unresolved = int(calls.str.startswith("cannot").sum())
    lines = [f"# model (measured / modelled per launch, 95 % interval against the tolerance band): "
             f"{agree} agree, {int(flagged.sum())} flagged, {unresolved} cannot be resolved at this noise"]
    shown = table[flagged | calls.str.startswith("cannot")]
    for r in shown.head(MAX_MODEL_LINES).itertuples(index=False):
        lines.append(f"model: {r.strategy} p={r.ranks} {human_bytes(int(r.bytes))}: measured {r.model_ratio:.2f}x "
                     f"modelled [{r.model_ratio_low:.2f}, {r.model_ratio_high:.2f}]: {r.model_call}")
    if len(shown) > MAX_MODEL_LINES:
        lines.append(f"# ... and {len(shown) - MAX_MODEL_LINES} more in bench.csv (column model_call)")
    return lines
