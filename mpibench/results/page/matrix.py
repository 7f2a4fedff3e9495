"""Scenario x strategy x recovery, in plan order, one coloured cell per case linking to its charts."""
from __future__ import annotations

from ..htmlparts import esc
from .verdict import FAIL, PASS, UNJUDGED, Verdict

SYMBOL = {PASS: "✓", FAIL: "✗", "unknown": "?", UNJUDGED: "·"}


def anchor(scenario: str) -> str:
    return "sc-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in scenario)


def matrix(v: Verdict) -> str:
    if not v.cases:
        return '<p class="missing">No case was run in this folder.</p>'
    scenarios = list(dict.fromkeys(c.scenario for c in v.cases))
    columns = list(dict.fromkeys((c.strategy, c.recovery) for c in v.cases))
    one_recovery = len({r for _, r in columns}) == 1
    by_key = {(c.scenario, c.strategy, c.recovery): c for c in v.cases}
    head = "".join(f"<th>{esc(s)}" + ("" if one_recovery else f"<br><small>{esc(r)}</small>") + "</th>"
                   for s, r in columns)
    recovery_note = f" (recovery: {esc(columns[0][1])})" if one_recovery and columns[0][1] else ""
    rows = []
    for scenario in scenarios:
        cells = []
        for strategy, recovery in columns:
            case = by_key.get((scenario, strategy, recovery))
            if case is None:
                cells.append('<td class="absent">–</td>')
                continue
            text = (f"{case.checks}" if case.verdict == PASS else "not judged" if case.verdict == UNJUDGED else
                    f"{case.violations} of {case.checks}" if case.checks else "no checks")
            title = (f"{scenario} / {strategy} / {recovery}: {case.verdict}, {case.steps} committed steps, "
                     f"{case.checks} checks, {case.violations} violated" + (f"; {case.reason}" if case.reason else ""))
            cells.append(f'<td class="cell {esc(case.verdict)}" title="{esc(title)}">'
                         f'<a href="#{anchor(scenario)}">{SYMBOL.get(case.verdict, "?")} {esc(text)}</a></td>')
        rows.append(f'<tr><th class="row"><a href="#{anchor(scenario)}">{esc(scenario)}</a></th>{"".join(cells)}</tr>')
    return (f'<p class="matrix-note">Every case in plan order{recovery_note}: ✓ checks, all held; ✗ violated '
            "of checked; ? no verdict. A cell links to its scenario's charts.</p>"
            f'<table id="matrix" class="matrix"><tr><th>scenario</th>{head}</tr>{"".join(rows)}</table>')
