"""The fault scenarios as small multiples: one panel per scenario in plan order, each with
its chart, what was injected, what it cost against the no-fault baseline, and whether the
strategies' curves coincide (they should: identical schedules, the same committed batches)."""
from __future__ import annotations

import math

import pandas as pd

from .. import scenario_svg
from ..htmlparts import esc, num
from ..inputs import RunFiles, plan_pairs
from .matrix import anchor

BASELINE_SCENARIO = "none"
# Strategies that reduce in different orders round differently; below this they draw as one line.
COINCIDE_REL = 1e-5


def scenario_text(name: str) -> str:
    """The named scenario's one-line description, if this installation knows it."""
    try:
        from mpibench.faults.scenarios import SCENARIOS

        return SCENARIOS[name][0]
    except (ImportError, KeyError, IndexError, TypeError):
        return ""


def section(files: RunFiles, progress=None) -> str:
    steps, faults = files["steps.csv"], files["faults.csv"]
    head = ("<h2 id='scenarios'>Fault scenarios</h2><p>Per scenario: loss (top) and effective batch (bottom) "
            "against step on one axis, the same strategy without faults dotted grey behind them, and loss "
            "against effective batch on the right, so a death reads both as a smaller batch and as what "
            "convergence paid. Uncommitted steps are shaded and the lines break there.</p>")
    if steps is None or steps.empty:
        return head + '<p class="missing">No steps.csv in this folder: no scenario ran.</p>'
    total = files.info.get("config", {}).get("steps") if files.info else None
    total = total if isinstance(total, int) else None
    keys = ["strategy"] + (["recovery"] if "recovery" in steps and steps.recovery.nunique() > 1 else [])
    labels = ["/".join(map(str, k)) for k in steps[keys].drop_duplicates().itertuples(index=False)]
    scenarios = [s for s in dict.fromkeys(s for s, _ in plan_pairs(files)) if (steps.scenario.astype(str) == s).any()]
    panels = []
    base_rows = steps[steps.scenario.astype(str) == BASELINE_SCENARIO]
    for i, scenario in enumerate(scenarios):
        if progress is not None:
            progress(f"scenario {i + 1}/{len(scenarios)}: {scenario}")
        rows = steps[steps.scenario.astype(str) == scenario]
        events = faults[faults.scenario.astype(str) == scenario] if faults is not None and not faults.empty else None
        # A baseline only where faults were injected: a no-fault scenario may change the data itself.
        base = None if events is None or events.empty or base_rows.empty else base_rows
        panels.append(panel(scenario, rows, base, events, total))
    note = "" if not base_rows.empty else ('<p class="missing">No no-fault run (scenario none) in this folder: '
                                           "the charts have no baseline.</p>")
    return (head + scenario_svg.legend(labels) + note + '<div class="grid">' + "".join(panels) + "</div>"
            + fault_tables(faults))


def panel(scenario: str, rows: pd.DataFrame, base: pd.DataFrame | None, events: pd.DataFrame | None,
          total: int | None) -> str:
    text = scenario_text(scenario)
    keys = ["strategy"] + (["recovery"] if "recovery" in rows and rows.recovery.nunique() > 1 else [])
    series = scenario_svg.series_of(rows, keys)
    base_series = scenario_svg.series_of(base, keys) if base is not None else []
    lines = [f"<p class='what'>{esc(text)}</p>" if text else "",
             f"<p>{faults_line(events)}</p>", f"<p>{cost_line(series, base_series, total)}</p>",
             f"<p class='coincide'>{coincide_line(series)}</p>"]
    return (f'<div class="panel" id="{anchor(scenario)}"><h3>{esc(scenario)}</h3>'
            + scenario_svg.chart(scenario, rows, base, events, total) + "".join(lines) + "</div>")


def faults_line(events: pd.DataFrame | None) -> str:
    if events is None or events.empty:
        return "No fault injected."
    injected = events[events.kind.astype(str).isin(scenario_svg.FAULT_COLOURS)]
    reactions = events[~events.kind.astype(str).isin(scenario_svg.FAULT_COLOURS)]
    seen = injected.drop_duplicates(["step", "kind", "rank"])
    text = "; ".join(f"{esc(r.kind)} of rank {esc(r.rank)} at step {esc(r.step)}" for r in seen.itertuples(index=False))
    if not reactions.empty:
        counts = reactions.drop_duplicates(["step", "kind", "rank"]).kind.value_counts()
        text += " (then " + ", ".join(f"{n} {esc(k)}" for k, n in counts.items()) + ")"
    return "Injected: " + (text or "nothing the charts mark")


def final(series) -> float:
    finite = [v for v in series.loss if math.isfinite(v)]
    return finite[-1] if finite else math.nan


def cost_line(series, base_series, total: int | None) -> str:
    """Final loss against the baseline's, the smallest batch, and the steps that committed nothing."""
    if not series:
        return ""
    first = series[0]
    parts = [f"final loss {num(final(first), 4)}"]
    base = next((b for b in base_series if b.label == first.label), None)
    if base is not None and math.isfinite(final(base)) and final(base) != 0:
        change = (final(first) - final(base)) / abs(final(base))
        parts[-1] += f" vs {num(final(base), 4)} without faults ({change:+.1%})"
    batches = [b for b in first.batch if math.isfinite(b)]
    if batches:
        full = max(b for s in series + base_series for b in s.batch if math.isfinite(b))
        parts.append(f"smallest effective batch {num(min(batches))} of {num(full)}")
    last = total or (max(first.steps) + 1 if first.steps else 0)
    gaps = scenario_svg.spans(scenario_svg.missing_steps(first, last))
    if gaps:
        parts.append("nothing committed at step" + ("s " if len(gaps) > 1 or gaps[0][1] > gaps[0][0] else " ")
                     + ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in gaps))
    return esc(f"{first.label}: " + "; ".join(parts) + ".")


def coincide_line(series) -> str:
    if len(series) < 2:
        return ""
    first, same, differ = series[0], [], []
    for other in series[1:]:
        a = dict(zip(first.steps, zip(first.loss, first.batch)))
        b = dict(zip(other.steps, zip(other.loss, other.batch)))
        if a.keys() != b.keys():
            differ.append(f"{other.label} committed different steps from {first.label}")
            continue
        batch_diff = [s for s in a if a[s][1] != b[s][1]]
        if batch_diff:
            differ.append(f"{other.label}'s effective batch differs from {first.label}'s at step {batch_diff[0]}")
            continue
        gap = max((abs(a[s][0] - b[s][0]) for s in a), default=0.0)
        scale = max((abs(v[0]) for v in a.values()), default=1.0) or 1.0
        if gap <= COINCIDE_REL * scale:
            same.append((other.label, gap))
        else:
            differ.append(f"{other.label}'s loss differs from {first.label}'s by up to {num(gap)}")
    text = []
    if same:
        names = " and ".join([first.label] + [s for s, _ in same])
        gap = max(g for _, g in same)
        losses = "identical losses" if gap == 0 else f"losses within {num(gap)} (summation order)"
        text.append(f"{names} coincide: same committed steps and effective batches, {losses}, so their lines "
                    f"lie on top of each other ({first.label} wide and pale, the others dashed).")
    if differ:
        text.append("Not identical: " + "; ".join(differ) + ".")
    return esc(" ".join(text))


def fault_tables(faults: pd.DataFrame | None) -> str:
    """A count per scenario, strategy and kind, then every event behind a disclosure."""
    if faults is None:
        return '<h3>Injected faults</h3><p class="missing">No faults.csv in this folder.</p>'
    if faults.empty:
        return "<h3>Injected faults</h3><p>No fault was injected in this run.</p>"
    from ..htmlparts import table

    steps = pd.to_numeric(faults["step"], errors="coerce")
    summary = (faults.assign(step=steps).groupby(["scenario", "kind"], sort=False)
               .agg(strategies=("strategy", lambda s: " ".join(dict.fromkeys(map(str, s)))),
                    events=("step", "count"), first=("step", "min"), last=("step", "max")).reset_index())
    rows = [[r.scenario, r.kind, r.strategies, int(r.events), step_range(r.first, r.last)]
            for r in summary.itertuples(index=False)]
    cols = [c for c in ["scenario", "strategy", "step", "phase", "rank", "kind", "detail"] if c in faults.columns]
    return ("<h3>Injected faults and reactions (faults.csv)</h3>"
            + table(["scenario", "kind", "strategies", "events", "steps"], rows)
            + f"<details><summary>all {len(faults)} events</summary>"
            + table(cols, faults[cols].values.tolist()) + "</details>")


def step_range(first, last) -> str:
    if pd.isna(first):
        return ""
    return f"{int(first)}" if first == last else f"{int(first)}–{int(last)}"
