"""The model beside every measured row: calibration, modelled rows, flagged disagreements.

``bench`` calibrates in the same job (ping-pong, reduction throughput, call
overhead: :func:`mpibench.job.calibrate.calibrate_collectives`) or reuses
a calibration from ``--calibration FILE`` (a calibration JSON object, or a
run.json holding one under ``"calibration"``, or the folder holding it).
Every measured row then gets a ``modelled`` twin with measured/modelled time,
and ``comparison.csv`` flags each disagreement beyond the tolerance with the
causes the data supports, as the main job does.
"""
from __future__ import annotations

import json
import os

import pandas as pd

from mpibench.base.config import UsageError

from .rows import modelled_row
from .sharded import fix_row


def load_calibration(path: str):
    """A :class:`Calibration` from a file or run folder; bad input -> UsageError."""
    from mpibench.results.calibration import Calibration

    file = os.path.join(path, "run.json") if os.path.isdir(path) else path
    try:
        with open(file) as fh:
            data = json.load(fh)
    except OSError as exc:
        raise UsageError(f"cannot read calibration {file}: {exc.strerror}") from None
    except ValueError:
        raise UsageError(f"calibration {file} is not JSON") from None
    data = data.get("calibration", data) if isinstance(data, dict) else None
    try:
        return Calibration.from_dict(data)
    except (TypeError, AttributeError):
        raise UsageError(f"{file} holds no calibration (alpha_s, beta_s_per_byte, gamma ... )") from None


def modelled_rows(cal, measured: list[dict], options: dict) -> tuple[list[dict], list[str]]:
    """The model's twin of each measured row, and the strategies the model has no formula for."""
    from mpibench.results import costmodel

    rows, unknown = [], []
    for m in measured:
        if m["strategy"] == "floor":  # copies and adds without MPI: not a collective the model prices
            continue
        try:
            t = costmodel.sync_s(cal, m["strategy"], int(m["ranks"]), float(m["bytes"]), options)
        except ValueError:
            unknown.append(m["strategy"])
            continue
        row = fix_row(modelled_row(m, t))  # a reduce-scatter or all-gather row: its own busbw factor
        band = "model band " + costmodel.band_of(cal, m["strategy"], int(m["ranks"]), float(m["bytes"]), options)
        row["note"] = "; ".join(n for n in (row.get("note"), band) if n)
        rows.append(row)
    return rows, sorted(set(unknown))


def disagreements(cal, rows: list[dict], options: dict) -> pd.DataFrame:
    """comparison.csv's rows for the collectives (see :mod:`mpibench.results.compare`)."""
    from mpibench.base.records import BENCH_COLUMNS
    from mpibench.results.compare import compare_collectives, comparison_frame

    frame = pd.DataFrame(rows, columns=BENCH_COLUMNS)
    return comparison_frame(compare_collectives(cal, frame, options, cal.other_load_cores))


def flag_lines(comparison: pd.DataFrame) -> list[str]:
    from .rows import human_bytes

    lines = []
    for r in comparison[~comparison.within.astype(bool)].itertuples(index=False):
        lines.append(f"model: {r.strategy} p={r.ranks} {human_bytes(int(r.bytes))}: measured "
                     f"{r.ratio:.2f}x modelled ({r.flag}): {r.cause}")
    return lines
