"""The randomized sweep: its plan and tallies (sweep.json), then its cases (sweep.csv), the
ones that did not end cleanly first, each with the command that replays it."""
from __future__ import annotations

import pandas as pd

from ..htmlparts import Markup, esc, num, table
from ..inputs import RunFiles

COLUMNS = ["case", "workers", "strategy", "recovery", "faults", "steps", "checks", "violations",
           "first_violation", "outcome"]


def section(files: RunFiles) -> str:
    head = "<h2 id='sweep'>Randomized sweep</h2>"
    sweep, info = files["sweep.csv"], files.sweep_json
    if sweep is None and info is None:
        return head + "<p class='missing'>No sweep ran for this folder (no sweep.csv or sweep.json).</p>"
    parts = [head, f"<p>Random fault schedules, {esc(launches(info))}; every command replays its case "
                   "exactly, alone in an MPI job of its own.</p>"]
    if info:
        parts.append(plan_text(info))
    if sweep is None or sweep.empty:
        parts.append("<p class='missing'>sweep.csv holds no case.</p>")
        return "".join(parts)
    outcome = sweep.outcome.astype(str) if "outcome" in sweep else pd.Series(["ok"] * len(sweep))
    violations = pd.to_numeric(sweep.violations, errors="coerce").fillna(0)
    bad = sweep[(violations > 0) | (outcome.str.lower() != "ok").values]
    parts.append(f"<p>{len(sweep)} cases, {len(bad)} not clean.</p>")
    if not bad.empty:
        parts.append(cases_table(bad, with_replay=True))
    parts.append(f"<details><summary>all {len(sweep)} cases</summary>{cases_table(sweep, with_replay=True)}</details>")
    findings = files["findings.csv"]
    if findings is not None and not findings.empty:
        cols = [c for c in ["case", "outcome", "first_violation", "exit_status", "stderr_tail"] if c in findings]
        parts.append("<details><summary>stderr of the cases that did not end cleanly (findings.csv)</summary>"
                     + table(cols, findings[cols].values.tolist()) + "</details>")
    return "".join(parts)


def launches(info: dict | None) -> str:
    """How the sweep's cases were launched, as sweep.json records it."""
    per_launch = (info or {}).get("cases_per_launch")
    if isinstance(per_launch, int) and per_launch > 1:
        return f"up to {per_launch} cases one after another in each MPI job"
    return "one MPI job per case" if per_launch == 1 else "cases launched as sweep.json does not say"


def plan_text(info: dict) -> str:
    outcomes = info.get("outcomes", {})
    scheduled = info.get("scheduled", {})
    injected = info.get("injected", {})
    seeds = info.get("seeds")
    first = info.get("first_seed", 0)
    rows = [("cases", info.get("cases")),
            ("seeds", f"{first}–{first + seeds - 1}" if isinstance(seeds, int) and isinstance(first, int) else seeds),
            ("workers", " ".join(map(str, info.get("workers", [])))),
            ("strategies", " ".join(map(str, info.get("strategies", [])))), ("steps per case", info.get("steps")),
            ("outcomes", ", ".join(f"{n} {k}" for k, n in outcomes.items())),
            ("scheduled faults", ", ".join(f"{n} {k}" for k, n in scheduled.items())),
            ("faults.csv rows", ", ".join(f"{n} {k}" for k, n in injected.items()) or "none"),
            ("wall time", f"{num(info['wall_s'])} s" if isinstance(info.get("wall_s"), (int, float)) else None),
            ("rate", f"{num(info['cases_per_minute'])} cases/min"
             if isinstance(info.get("cases_per_minute"), (int, float)) else None)]
    body = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in rows if v not in (None, ""))
    return f"<table class='meta'>{body}</table>"


def cases_table(frame: pd.DataFrame, with_replay: bool) -> str:
    cols = [c for c in COLUMNS if c in frame.columns]
    rows, classes = [], []
    for r in frame.to_dict("records"):
        cells = [r.get(c) for c in cols]
        bad = (pd.to_numeric(pd.Series([r.get("violations")]), errors="coerce").fillna(0).iloc[0] > 0
               or str(r.get("outcome", "ok")).lower() not in ("ok", "nan"))
        if with_replay:
            replay = f"<code>{esc(r.get('replay'))}</code>"
            minimal = r.get("minimal_replay")
            if isinstance(minimal, str) and minimal:
                replay += f"<br>minimal: <code>{esc(minimal)}</code>"
            cells.append(Markup(replay))
        rows.append(cells)
        classes.append(["bad" if bad else "ok"] + [""] * (len(cells) - 1))
    return table(cols + (["replay"] if with_replay else []), rows, classes)
