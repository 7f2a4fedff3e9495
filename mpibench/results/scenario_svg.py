"""One scenario's chart as inline SVG: loss and effective batch on a shared step axis, and a
loss-vs-effective-batch scatter beside them.

Drawn by hand rather than with matplotlib because every mark is then an element
the page (and a test) can find by class: ``series`` (one path per strategy, broken
at uncommitted steps, never bridged), ``baseline`` (the same strategy without
faults), ``outage`` (steps that committed nothing), ``epoch-end`` and
``fault fault-KIND``. It is also small and quick: no font glyphs, no raster.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from mpibench.faults import kinds

from .htmlparts import esc, num
from .svgaxes import Scale, nice_ticks, padded

WIDTH, HEIGHT = 640, 236
PLOT_X0, PLOT_X1 = 48, 440
LOSS_Y0, LOSS_Y1 = 16, 112  # top, bottom
BATCH_Y0, BATCH_Y1 = 124, 196
SCATTER_X0, SCATTER_X1 = 498, 630
# Each fault kind's mark, from its module (mpibench/faults/kinds/); the legend lists them
# in this order (kill, partition, delay as before, then outside kinds).
_MARK_ORDER = {"kill": 0, "partition": 1, "delay": 2}
FAULT_COLOURS = {k.NAME: k.COLOUR for k in sorted(kinds.KINDS, key=lambda k: _MARK_ORDER.get(k.NAME, 3))}
FAULT_GLYPHS = {k.NAME: k.GLYPH for k in sorted(kinds.KINDS, key=lambda k: _MARK_ORDER.get(k.NAME, 3))}
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
# Ring and PS usually give the same curve: the first is drawn wide and pale, the next dashed on top.
STROKES = [(3.2, 0.5, ""), (1.3, 1.0, "5 3"), (1.1, 1.0, "2 2"), (1.1, 1.0, "6 2 1 2")]
BASELINE = "#888"


@dataclass(frozen=True)
class Series:
    label: str
    steps: list[int]
    loss: list[float]
    batch: list[float]


def series_of(rows: pd.DataFrame, keys: list[str]) -> list[Series]:
    """One Series per strategy (and recovery, when there are several), in order of appearance."""
    out = []
    for key, part in rows.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        part = part.assign(step=pd.to_numeric(part.step, errors="coerce")).dropna(subset=["step"]).sort_values("step")
        out.append(Series("/".join(map(str, key)), [int(s) for s in part.step],
                          list(pd.to_numeric(part.loss_mean, errors="coerce")),
                          list(pd.to_numeric(part.effective_batch, errors="coerce"))))
    return out


def style(index: int) -> str:
    width, opacity, dash = STROKES[min(index, len(STROKES) - 1)]
    colour = PALETTE[index % len(PALETTE)]
    return (f'stroke="{colour}" stroke-width="{width}" stroke-opacity="{opacity}" fill="none"'
            + (f' stroke-dasharray="{dash}"' if dash else ""))


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def runs(steps: list[int]) -> list[list[int]]:
    """Consecutive runs of step indices: [0,1,2,5,6] -> [[0,1,2],[5,6]]."""
    out: list[list[int]] = []
    for i, s in enumerate(steps):
        if out and s == steps[i - 1] + 1:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def path(xs: list[float], ys: list[float], groups: list[list[int]], stepped: bool = False) -> str:
    """An SVG path with one sub-path per group: a gap in the steps is a gap in the line."""
    parts = []
    for group in groups:
        points = [(xs[i], ys[i]) for i in group if math.isfinite(ys[i])]
        if not points:
            continue
        if stepped:
            half = (xs[group[1]] - xs[group[0]]) / 2 if len(group) > 1 else 3
            cmd = [f"M{points[0][0] - half:.1f},{points[0][1]:.1f}"]
            for (x, y) in points:
                cmd.append(f"H{x:.1f}V{y:.1f}")
            cmd.append(f"H{points[-1][0] + half:.1f}")
            parts.append("".join(cmd))
        else:
            parts.append("M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in points))
            if len(points) == 1:
                parts.append("m-2,0h4")
    return " ".join(parts)


def missing_steps(series: Series, total: int) -> list[int]:
    have = set(series.steps)
    return [s for s in range(total) if s not in have]


def spans(steps: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s in steps:
        if out and s == out[-1][1] + 1:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out


def axis(scale: Scale, ticks: list[float], x: float, label: str) -> str:
    parts = [f'<line x1="{x}" x2="{x}" y1="{scale.out_hi}" y2="{scale.out_lo}" stroke="#999"/>']
    for t in ticks:
        y = scale(t)
        parts.append(f'<line x1="{x - 3}" x2="{PLOT_X1}" y1="{y}" y2="{y}" stroke="#eee"/>'
                     f'<text x="{x - 5}" y="{y + 3}" text-anchor="end">{num(t)}</text>')
    mid = (scale.out_lo + scale.out_hi) / 2
    parts.append(f'<text x="10" y="{mid}" transform="rotate(-90 10 {mid})" text-anchor="middle">{esc(label)}</text>')
    return "".join(parts)


def chart(scenario: str, rows: pd.DataFrame, baseline: pd.DataFrame | None, faults: pd.DataFrame | None,
          total_steps: int | None = None) -> str:
    """The scenario's SVG. ``baseline``: the no-fault scenario's rows; ``faults``: faults.csv rows."""
    keys = ["strategy"] + (["recovery"] if "recovery" in rows and rows.recovery.nunique() > 1 else [])
    series = series_of(rows, keys)
    base = series_of(baseline, keys) if baseline is not None and not baseline.empty else []
    every = series + base
    last = max((max(s.steps) for s in every if s.steps), default=0)
    total = max(total_steps or 0, last + 1)
    x = Scale(-0.5, total - 0.5, PLOT_X0, PLOT_X1)
    loss = Scale(*padded([v for s in every for v in s.loss]), LOSS_Y1, LOSS_Y0)
    batch = Scale(*padded([v for s in every for v in s.batch], floor_zero=True), BATCH_Y1, BATCH_Y0)
    out = [f'<svg class="scenario-chart" data-scenario="{esc(scenario)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'width="{WIDTH}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg" role="img" '
           f'aria-label="{esc(scenario)}: loss and effective batch against step; loss against effective batch">']
    out.append(outages(series, total, x))
    out.append(epoch_ends(rows, x))
    out.append(axis(loss, nice_ticks(loss.lo, loss.hi, 3), PLOT_X0, "loss"))
    out.append(axis(batch, nice_ticks(batch.lo, batch.hi, 2), PLOT_X0, "batch"))
    out.append(step_axis(x, total))
    for i, s in enumerate(base):
        groups = runs(s.steps)
        xs = [x(v) for v in s.steps]
        out.append(f'<path class="baseline" data-series="{esc(s.label)}" stroke="{BASELINE}" stroke-width="1" '
                   f'stroke-dasharray="1 2" fill="none" d="{path(xs, [loss(v) for v in s.loss], groups)}">'
                   f'<title>{esc(s.label)} without faults</title></path>')
        out.append(f'<path class="baseline" data-series="{esc(s.label)}" stroke="{BASELINE}" stroke-width="1" '
                   f'stroke-dasharray="1 2" fill="none" d="{path(xs, [batch(v) for v in s.batch], groups, True)}"/>')
    for i, s in enumerate(series):
        groups = runs(s.steps)
        xs = [x(v) for v in s.steps]
        out.append(f'<path class="series loss" data-series="{esc(s.label)}" {style(i)} '
                   f'd="{path(xs, [loss(v) for v in s.loss], groups)}"><title>{esc(s.label)}: loss</title></path>')
        out.append(f'<path class="series batch" data-series="{esc(s.label)}" {style(i)} '
                   f'd="{path(xs, [batch(v) for v in s.batch], groups, True)}"><title>{esc(s.label)}: '
                   f'effective batch</title></path>')
    out.append(fault_marks(faults, x))
    out.append(scatter(series, base))
    out.append("</svg>")
    return "".join(out)


def step_axis(x: Scale, total: int) -> str:
    parts = [f'<line x1="{PLOT_X0}" x2="{PLOT_X1}" y1="{BATCH_Y1}" y2="{BATCH_Y1}" stroke="#999"/>']
    for t in nice_ticks(0, max(total - 1, 1), 6):
        if t != int(t):
            continue
        parts.append(f'<text x="{x(t)}" y="{BATCH_Y1 + 12}" text-anchor="middle">{int(t)}</text>')
    parts.append(f'<text x="{(PLOT_X0 + PLOT_X1) / 2}" y="{HEIGHT - 4}" text-anchor="middle">step</text>')
    return "".join(parts)


def outages(series: list[Series], total: int, x: Scale) -> str:
    """Shaded steps that committed nothing: grey where no strategy committed, tinted where one did not."""
    if not series:
        return ""
    missing = [set(missing_steps(s, total)) for s in series]
    common = set.intersection(*missing)
    parts = []
    labels = ", ".join(s.label for s in series)
    for a, b in spans(sorted(common)):
        parts.append(outage_rect(a, b, x, "#bbb", f"step {a}" + (f"–{b}" if b > a else "")
                                 + f": nothing committed ({labels})", "all"))
    for i, (s, gone) in enumerate(zip(series, missing)):
        for a, b in spans(sorted(gone - common)):
            parts.append(outage_rect(a, b, x, colour(i), f"step {a}" + (f"–{b}" if b > a else "")
                                     + f": {s.label} committed nothing", s.label))
    return "".join(parts)


def outage_rect(a: int, b: int, x: Scale, fill: str, title: str, who: str) -> str:
    left, right = x(a - 0.5), x(b + 0.5)
    return (f'<rect class="outage" data-steps="{a}-{b}" data-series="{esc(who)}" x="{left}" y="{LOSS_Y0}" '
            f'width="{round(right - left, 1)}" height="{BATCH_Y1 - LOSS_Y0}" fill="{fill}" fill-opacity="0.28">'
            f'<title>{esc(title)}</title></rect>')


def epoch_ends(rows: pd.DataFrame, x: Scale) -> str:
    """Where epochs end: a short tick under the batch at each step that ended some worker's epoch
    (its short batch: the sawtooth), and a dashed line where every worker has begun the next epoch."""
    if "epoch_ends" not in rows:
        return ""
    steps = pd.to_numeric(rows.step, errors="coerce")
    ends = rows[rows.epoch_ends.notna() & (rows.epoch_ends.astype(str).str.strip() != "")]
    parts = []
    for step, part in ends.groupby(steps[ends.index], sort=True):
        workers = " ".join(sorted({w for text in part.epoch_ends.astype(str) for w in text.split()}, key=_int))
        xs = x(float(step))
        parts.append(f'<line class="epoch-end" data-step="{int(step)}" x1="{xs}" x2="{xs}" y1="{BATCH_Y1 - 7}" '
                     f'y2="{BATCH_Y1}" stroke="#2a9d8f" stroke-width="2">'
                     f'<title>step {int(step)}: last batch of the epoch for worker(s) {esc(workers)}</title></line>')
    if "epoch" in rows:
        first = rows.assign(step=steps, epoch=pd.to_numeric(rows.epoch, errors="coerce")).dropna(
            subset=["step", "epoch"]).groupby("epoch").step.min()
        for epoch, step in first.items():
            if epoch == first.index.min():
                continue
            xs = x(float(step) - 0.5)
            parts.append(f'<line class="epoch-end epoch-boundary" data-epoch="{int(epoch)}" x1="{xs}" x2="{xs}" '
                         f'y1="{LOSS_Y0}" y2="{BATCH_Y1}" stroke="#2a9d8f" stroke-width="1" stroke-dasharray="4 3">'
                         f'<title>epoch {int(epoch)} begins for every worker at step {int(step)}</title></line>')
    return "".join(parts)


def _int(text: str) -> int:
    return int(text) if text.isdigit() else 1 << 30


def _cell(value) -> str:
    """A CSV cell as text: an empty one (NaN once read, as a partition's phase) is empty, never 'nan'."""
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def fault_marks(faults: pd.DataFrame | None, x: Scale) -> str:
    """A glyph and a thin line at each injected fault (kill, partition, delay), by kind."""
    if faults is None or faults.empty:
        return ""
    events = faults[faults.kind.astype(str).isin(FAULT_COLOURS)]
    events = events.assign(step=pd.to_numeric(events.step, errors="coerce")).dropna(subset=["step"])
    parts = []
    for (step, kind), part in events.groupby(["step", "kind"], sort=True):
        kind = str(kind)
        what = "; ".join(sorted({f"rank {_cell(r.rank)} {_cell(getattr(r, 'phase', ''))}".strip()
                                 for r in part.itertuples(index=False)}))
        xs = x(float(step))
        col = FAULT_COLOURS[kind]
        parts.append(f'<g class="fault fault-{esc(kind)}" data-step="{int(step)}"><title>step {int(step)}: {esc(kind)} '
                     f'({esc(what)})</title><line x1="{xs}" x2="{xs}" y1="{LOSS_Y0}" y2="{BATCH_Y1}" stroke="{col}" '
                     f'stroke-width="1" stroke-opacity="0.6"/><text x="{xs}" y="{LOSS_Y0 - 3}" fill="{col}" '
                     f'text-anchor="middle" font-size="11">{FAULT_GLYPHS[kind]}</text></g>')
    return "".join(parts)


def scatter(series: list[Series], base: list[Series]) -> str:
    every = series + base
    bx = Scale(*padded([v for s in every for v in s.batch]), SCATTER_X0, SCATTER_X1)
    ly = Scale(*padded([v for s in every for v in s.loss]), BATCH_Y1, LOSS_Y0)
    parts = [f'<g class="scatter"><rect x="{SCATTER_X0}" y="{LOSS_Y0}" width="{SCATTER_X1 - SCATTER_X0}" '
             f'height="{BATCH_Y1 - LOSS_Y0}" fill="none" stroke="#ccc"/>']
    for t in nice_ticks(bx.lo, bx.hi, 3):
        parts.append(f'<text x="{bx(t)}" y="{BATCH_Y1 + 12}" text-anchor="middle">{num(t)}</text>')
    for t in nice_ticks(ly.lo, ly.hi, 3):
        parts.append(f'<text x="{SCATTER_X0 - 4}" y="{ly(t) + 3}" text-anchor="end">{num(t)}</text>')
    parts.append(f'<text x="{(SCATTER_X0 + SCATTER_X1) / 2}" y="{HEIGHT - 4}" text-anchor="middle">'
                 "effective batch → loss</text>")
    for s in base:
        parts.append("".join(f'<circle class="baseline" cx="{bx(b)}" cy="{ly(v)}" r="2.2" fill="none" '
                             f'stroke="{BASELINE}"/>' for b, v in zip(s.batch, s.loss)
                             if math.isfinite(b) and math.isfinite(v)))
    for i, s in enumerate(series):
        parts.append("".join(f'<circle class="series" data-series="{esc(s.label)}" cx="{bx(b)}" cy="{ly(v)}" '
                             f'r="{2.6 if i == 0 else 1.6}" fill="{colour(i)}" fill-opacity="{0.45 if i == 0 else 1}"/>'
                             for b, v in zip(s.batch, s.loss) if math.isfinite(b) and math.isfinite(v)))
    return "".join(parts) + "</g>"


def legend(labels: list[str]) -> str:
    """The strategies' line styles, the baseline, outages, epoch ends and fault glyphs, drawn once."""
    items = []
    for i, label in enumerate(labels):
        items.append(f'<svg width="34" height="10"><line x1="2" x2="32" y1="5" y2="5" {style(i)}/></svg>{esc(label)}')
    items.append(f'<svg width="34" height="10"><line x1="2" x2="32" y1="5" y2="5" stroke="{BASELINE}" '
                 f'stroke-dasharray="1 2"/></svg>same strategy, no faults (baseline)')
    items.append('<svg width="14" height="10"><rect width="14" height="10" fill="#bbb" fill-opacity="0.28"/></svg>'
                 "steps that committed nothing")
    items.append('<svg width="10" height="10"><line x1="5" x2="5" y1="3" y2="10" stroke="#2a9d8f" '
                 'stroke-width="2"/></svg>a worker\'s epoch ended (its short batch)')
    items.append('<svg width="10" height="10"><line x1="5" x2="5" y1="0" y2="10" stroke="#2a9d8f" '
                 'stroke-dasharray="4 3"/></svg>every worker in the next epoch')
    for kind, glyph in FAULT_GLYPHS.items():
        items.append(f'<span style="color:{FAULT_COLOURS[kind]}">{glyph}</span> {kind}')
    return '<div class="legend">' + "".join(f"<span>{item}</span>" for item in items) + "</div>"
