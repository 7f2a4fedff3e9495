"""The training step part by part: each scaling point's measured stack beside its modelled one.

One row per point (strategy, mode, p): a bar per tag whose segments are the
parts (compute, reduction, commit, evidence, check, wait for the last rank),
drawn to one scale across the table, and each part's measured / modelled
milliseconds with the model's error. Runs without part columns (older
scaling.csv files) show a line saying so.
"""
from __future__ import annotations

import pandas as pd

from ..costmodel import STEP_PARTS
from ..htmlparts import Markup, esc, num, table

COLOURS = {"compute_s": "#4e79a7", "reduction_s": "#f28e2b", "commit_s": "#e15759", "evidence_s": "#76b7b2",
           "check_s": "#59a14f", "wait_s": "#bab0ac"}
BAR_PX = 240


def _value(row, part) -> float:
    value = pd.to_numeric(row.get(part), errors="coerce") if row is not None else float("nan")
    return 0.0 if pd.isna(value) else float(value)


def _bar(row, scale: float) -> Markup:
    spans = []
    for part in STEP_PARTS:
        width = _value(row, part) * scale
        if width >= 0.5:
            spans.append(f'<span title="{esc(part[:-2])} {num(_value(row, part) * 1e3)} ms" style="display:'
                         f'inline-block;height:10px;width:{width:.0f}px;background:{COLOURS[part]}"></span>')
    return Markup("".join(spans))


def _cell(measured, modelled, part) -> str:
    got, want = _value(measured, part), _value(modelled, part)
    error = f" ({(want - got) / got:+.0%})" if got > 0 and modelled is not None else ""
    return f"{num(got * 1e3)} / {num(want * 1e3) if modelled is not None else '-'}{error}"


def stack_section(scaling: pd.DataFrame | None) -> str:
    if scaling is None or scaling.empty or not set(STEP_PARTS) <= set(scaling.columns):
        return "<p>No step parts in scaling.csv (a run from before they were recorded).</p>"
    keys = ["strategy", "mode", "ranks"]
    measured = scaling[scaling.tag == "measured"].drop_duplicates(keys)
    modelled = scaling[scaling.tag == "modelled"].drop_duplicates(keys).set_index(keys)
    totals = [sum(_value(r, p) for p in STEP_PARTS) for r in scaling.to_dict("records")]
    scale = BAR_PX / max(max(totals, default=0.0), 1e-12)
    rows = []
    for m in measured.to_dict("records"):
        key = (m["strategy"], m["mode"], m["ranks"])
        d = modelled.loc[key].to_dict() if key in modelled.index else None
        rows.append([m["strategy"], m["mode"], m["ranks"],
                     Markup(f"{_bar(m, scale)}<br>{_bar(d, scale) if d else ''}"),
                     *[_cell(m, d, p) for p in STEP_PARTS]])
    legend = " ".join(f'<span style="color:{c}">■</span> {esc(p[:-2])}' for p, c in COLOURS.items())
    return ("<p>The step part by part: per point the measured stack (upper bar) beside the modelled one "
            f"(lower bar), one scale for the table; cells are measured / modelled ms (model error). {legend}</p>"
            + table(["strategy", "mode", "p", "measured / modelled", *[p[:-2] for p in STEP_PARTS]], rows))
