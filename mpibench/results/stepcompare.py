"""Measured against modelled step, part by part, over one or more run folders.

Every scaling point in ``scaling.csv`` has a ``measured`` row and its
``modelled`` twin (same strategy, mode and p). For each point at p up to a
bound this compares the step time (``step_time_s``: the step timer's compute
and sync span) and each part of the step (``costmodel.STEP_PARTS``) with the
model's error, ``modelled / measured - 1``; over several folders (repeated
runs) it takes the median of each measured and each modelled figure per point
and judges those. The goal is the step within ``TOLERANCE`` (15 % at p = 1,
25 % above); a point that misses names the part whose measured and modelled
times lie furthest apart, the part the model lacks. Nothing is fitted here:
both sides are read as the job wrote them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mpibench.base import stats
from .costmodel import STEP_PARTS

KEYS = ("strategy", "mode", "ranks")
FIGURES = ("step_time_s",) + STEP_PARTS
TOLERANCE = {1: 0.15}
TOLERANCE_ABOVE_ONE = 0.25


def tolerance(p: int) -> float:
    return TOLERANCE.get(int(p), TOLERANCE_ABOVE_ONE)


class StepInputError(ValueError):
    """A folder that holds no usable scaling.csv (bad input: exit 2)."""


@dataclass
class PointCompare:
    """One point's measured and modelled figures (seconds, ``FIGURES`` order; NaN: absent)."""

    strategy: str
    mode: str
    ranks: int
    measured: dict
    modelled: dict
    other_load_cores: float = float("nan")
    folders: int = 1

    def error(self, figure: str) -> float:
        got, want = self.measured.get(figure, np.nan), self.modelled.get(figure, np.nan)
        return want / got - 1.0 if got and got > 0 and np.isfinite(want) else float("nan")

    @property
    def holds(self) -> bool:
        return bool(abs(self.error("step_time_s")) <= tolerance(self.ranks))

    def widest_part(self) -> tuple[str, float, float]:
        """(part, measured s, modelled s) of the part whose two times lie furthest apart."""
        gaps = {p: abs(self.measured.get(p, np.nan) - self.modelled.get(p, np.nan)) for p in STEP_PARTS}
        known = {p: g for p, g in gaps.items() if np.isfinite(g)}
        part = max(known, key=known.get) if known else STEP_PARTS[0]
        return part, self.measured.get(part, np.nan), self.modelled.get(part, np.nan)


@dataclass
class FolderCompare:
    folder: str
    points: list = field(default_factory=list)


def _figures(row) -> dict:
    return {f: float(pd.to_numeric(row.get(f), errors="coerce")) for f in FIGURES}


def read_folder(folder: str, max_ranks: int) -> FolderCompare:
    path = os.path.join(folder, "scaling.csv")
    try:
        frame = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise StepInputError(f"{path}: cannot read ({type(exc).__name__})") from None
    missing = [c for c in (*KEYS, "tag", *FIGURES) if c not in frame.columns]
    if missing:
        raise StepInputError(f"{path}: no column {', '.join(missing)} (a run from before the step parts)")
    frame = frame[frame.ranks <= max_ranks]
    modelled = {tuple(r[k] for k in KEYS): r for r in frame[frame.tag == "modelled"].to_dict("records")}
    points = []
    for m in frame[frame.tag == "measured"].to_dict("records"):
        key = tuple(m[k] for k in KEYS)
        twin = modelled.get(key)
        points.append(PointCompare(m["strategy"], m["mode"], int(m["ranks"]), _figures(m),
                                   _figures(twin) if twin is not None else {f: np.nan for f in FIGURES},
                                   float(pd.to_numeric(m.get("other_load_cores"), errors="coerce"))))
    return FolderCompare(folder, points)


def median_points(folders: list) -> list:
    """Per point (in the first folder's order), the median over folders of each figure."""
    by_key: dict = {}
    for f in folders:
        for p in f.points:
            by_key.setdefault((p.strategy, p.mode, p.ranks), []).append(p)
    out = []
    for (strategy, mode, ranks), found in by_key.items():
        def med(side, figure):
            values = [getattr(p, side).get(figure, np.nan) for p in found]
            values = [v for v in values if np.isfinite(v)]
            return stats.median(values) if values else float("nan")

        load = [p.other_load_cores for p in found if np.isfinite(p.other_load_cores)]
        out.append(PointCompare(strategy, mode, ranks, {f: med("measured", f) for f in FIGURES},
                                {f: med("modelled", f) for f in FIGURES},
                                stats.median(load) if load else float("nan"), len(found)))
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}" if np.isfinite(seconds) else "-"


def _cell(point: PointCompare, figure: str) -> str:
    error = point.error(figure)
    shown = f"{error:+.0%}" if np.isfinite(error) else "n/a"
    return f"{_ms(point.measured[figure])}/{_ms(point.modelled[figure])} ({shown})"


def table(points: list) -> str:
    """Rows of measured/modelled ms (model error) per figure; goal and the widest part per point."""
    head = ["point", "load", *(f[:-2] for f in FIGURES), "goal"]
    rows = [head]
    for p in points:
        verdict = "holds" if p.holds else "MISS: {} {}/{} ms".format(
            p.widest_part()[0][:-2], *(_ms(v) for v in p.widest_part()[1:]))
        rows.append([f"{p.strategy} {p.mode} p={p.ranks}",
                     f"{p.other_load_cores:.2f}" if np.isfinite(p.other_load_cores) else "-",
                     *(_cell(p, f) for f in FIGURES), f"±{tolerance(p.ranks):.0%} {verdict}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def summary_line(points: list) -> str:
    held = sum(p.holds for p in points)
    return (f"goal: step within ±15 % at p = 1 and ±25 % at p = 2: {held} of {len(points)} points hold"
            + ("" if held == len(points) else "; each miss names its widest part (measured/modelled ms)"))


@dataclass(frozen=True)
class PointCall:
    """One point judged over launches: measured / modelled step per launch (each launch's
    model calibrated in that launch), its interval, the model's band and the call."""

    strategy: str
    mode: str
    ranks: int
    ratio: object  # launchstats.Interval of measured / modelled over the launches
    band_low: float
    band_high: float
    call: str

    @property
    def kind(self) -> str:
        """The call without its figures, so that calls of separate jobs can be compared."""
        return call_kind(self.call)


TOO_FEW = "too few launches"


def call_kind(call: str) -> str:
    """``agrees``, ``flagged: slower/faster than the model``, ``cannot resolve``, ``too few
    launches`` or ``no model``: a call's verdict without its noise figure."""
    return "cannot resolve" if call.startswith("cannot resolve") else call.split(" (")[0]


def point_calls(folders: list) -> list[PointCall]:
    """Per point (first seen order): the call over the folders, one launch each
    (:func:`mpibench.results.launchstats.model_call`). Flagged only where the interval
    excludes the band and ``agrees`` only where it lies inside it, each at the stated
    confidence: with too few launches for that, the call says so instead."""
    from . import launchstats

    by_key: dict = {}
    for f in folders:
        for p in f.points:
            got, want = p.measured.get("step_time_s"), p.modelled.get("step_time_s")
            if got and want and np.isfinite(got) and np.isfinite(want) and want > 0:
                by_key.setdefault((p.strategy, p.mode, p.ranks), []).append(got / want)
    out = []
    for (strategy, mode, ranks), ratios in by_key.items():
        tol = tolerance(ranks)
        low, high = 1 / (1 + tol), 1 / (1 - tol)  # modelled / measured - 1 within +-tol
        got = launchstats.median_interval(ratios)
        call = launchstats.model_call(got, low, high)
        if call_kind(call) in ("agrees", "flagged: slower than the model", "flagged: faster than the model") \
                and got.coverage < launchstats.CONFIDENCE:
            call = f"{TOO_FEW} ({got.n}: {got.coverage:.1%} coverage)"
        out.append(PointCall(strategy, mode, int(ranks), got, low, high, call))
    return out


def agreement(calls_by_job: dict) -> list[dict]:
    """Per point, each job's call kind and whether every job made the same call.
    ``calls_by_job``: job name -> list of :class:`PointCall` (or rows with the same fields)."""
    points: dict = {}
    for job, calls in calls_by_job.items():
        for c in calls:
            points.setdefault((c.strategy, c.mode, c.ranks), {})[job] = call_kind(c.call)
    rows = []
    for (strategy, mode, ranks), kinds in points.items():
        values = [kinds.get(job, "absent") for job in calls_by_job]
        rows.append({"strategy": strategy, "mode": mode, "ranks": ranks, "jobs": len(calls_by_job),
                     **{f"call_{job}": kinds.get(job, "absent") for job in calls_by_job},
                     "same_call": max(values.count(v) for v in values),
                     "all_agree": len(set(values)) == 1})
    return rows
