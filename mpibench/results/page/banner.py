"""The first thing on the page: one verdict, its counts, the first violation and its replay."""
from __future__ import annotations

from ..htmlparts import esc
from .verdict import FAIL, MEASURED, PASS, UNJUDGED, Verdict

WORDS = {PASS: "PASS", FAIL: "FAIL", "unknown": "UNKNOWN", UNJUDGED: "NOT JUDGED YET", MEASURED: "MEASURED"}


def banner(v: Verdict, warnings: list[str]) -> str:
    cases = len(v.cases) if v.case_count is None else v.case_count
    failed = sum(c.verdict == FAIL for c in v.cases)
    counts = (f"{v.checks:,} checks over {cases} case(s): {v.violations:,} violated"
              + (f", in {failed} case(s)" if failed else "")) if v.verdict != UNJUDGED else \
        f"{cases} planned case(s), none judged"
    if v.verdict == MEASURED:
        counts = "benchmarks only"
    word = "PARTIAL PASS" if v.partial else WORDS.get(v.verdict, esc(v.verdict).upper())
    parts = [f'<div id="verdict" class="banner {esc(v.verdict)}" data-verdict="{esc(v.verdict)}"'
             f' data-partial="{str(v.partial).lower()}">',
             f'<span class="word">{word}</span>', f'<span class="counts">{esc(counts)}</span>']
    if v.verdict == PASS:
        parts.append("<div>Every invariant held on every checked step"
                     + (" of the phases that ran.</div>" if v.partial else ".</div>"))
    elif v.reason:
        parts.append(f"<div>{esc(v.reason)}</div>")
    if v.not_run:
        parts.append("<div class='not-run'>Not run with this launch: " + "; ".join(
            esc(p) + (f" (needs {esc(n)})" if n else "") for p, n in v.not_run) + "</div>")
    if v.unfinished and v.verdict != "unknown":  # an unknown verdict's reason names them already
        parts.append("<div class='unfinished'>Planned but never finished: " + esc(", ".join(v.unfinished)) + "</div>")
    if v.first is not None:
        f = v.first
        parts.append(f'<div class="first">First violation: <strong>{esc(f.invariant)}</strong> at step '
                     f'{esc(f.step)} of {esc(f.scenario)} under {esc(f.strategy)}'
                     + (f" ({esc(f.recovery)})" if f.recovery else "")
                     + (f": {esc(f.detail)}" if f.detail else "") + "</div>")
        if f.replay:
            parts.append(f'<div class="replay">replay: <code>{esc(f.replay)}</code></div>')
    parts.append(f'<div class="source">from {esc(v.source)}</div></div>')
    for text in warnings:
        parts.append(f'<div class="warning">This folder may mix runs: {esc(text)}.</div>')
    return "".join(parts)
