"""report.html: the run's correctness report, built from whatever CSVs the folder holds.

The layout follows the argument of the suite: the property being checked,
the six invariants per scenario and strategy, the fault scenarios (loss and
effective batch against step), the sweep, the benchmarks with measured and
modelled figures side by side, what is deliberately not a violation, and the
findings. A missing file leaves its section saying so. The page is one file
with inline CSS and inline PNG charts: no scripts, no network.
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import pandas as pd

from . import charts, costmodel
from .calibration import Calibration
from .htmlparts import Markup, esc, fmt, missing, table

INVARIANTS = ("equivalence", "replicas", "accounting", "membership", "data", "coverage")

PROPERTY = (
    "For a mean-reduction loss over a partitioned batch, training on N workers is the same "
    "computation as single-process training over the union of the batches that contributed to the "
    "step. Every step, the update the workers applied is compared with the update a single float64 "
    "process computes from the raw samples of that union, by code that shares nothing with the "
    "production path. The reduction is right only if it weights by sample count: shards are uneven "
    "and epochs end on short batches, so a plain mean of means is caught.")

NOT_VIOLATIONS = (
    ("The effective batch drops after a death",
     "a dead worker's shard is not redistributed; the update is still exact over the survivors' union"),
    ("A partitioned or dropped straggler's batch is missing from its steps",
     "the minority side and a dropped straggler do not contribute; membership records why"),
    ("Ring and PS differ in the last bits",
     "different summation orders round differently; each stays within the float32 tolerance of the "
     "float64 reference"),
    ("The short batch at an epoch's end", "shard sizes dictate it; the sawtooth in the effective batch"),
)

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;line-height:1.4}
h1{margin-bottom:0}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{background:#e8f6e8}.bad{background:#fbe3e0}.unknown{background:#fff3cd}
.missing{color:#777;font-style:italic}code{font-size:12px;background:#f6f6f6;padding:1px 3px}
img{max-width:100%;display:block;margin:.5em 0}.meta td{border:none;padding:1px 8px 1px 0}
"""


# ----------------------------------------------------------------------------- inputs
def read_csv(out_dir: str, name: str) -> pd.DataFrame | None:
    path = os.path.join(out_dir, name)
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def read_run_json(out_dir: str) -> dict:
    path = os.path.join(out_dir, "run.json")
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def calibration_of(info: dict) -> Calibration | None:
    data = info.get("calibration")
    return Calibration.from_dict(data) if isinstance(data, dict) and "alpha_s" in data else None


def normalise_passed(values: pd.Series) -> pd.Series:
    return values.astype(str).str.strip().str.lower()


# ----------------------------------------------------------------------------- sections
def section_header(info: dict, out_dir: str) -> str:
    mpi, ulfm = info.get("mpi", {}), info.get("ulfm", {})
    rows = [("output folder", os.path.abspath(out_dir)), ("seed", info.get("seed")),
            ("ranks", info.get("ranks")), ("hosts", " ".join(info.get("hosts", []))),
            ("cores on this host", info.get("cores_on_this_host")), ("MPI", mpi.get("library")),
            ("ULFM active", ulfm.get("active")), ("schema version", info.get("schema_version")),
            ("report built", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))]
    body = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in rows if v not in (None, ""))
    note = "" if info else missing("run.json")
    return f"<h1>mpibench correctness report</h1><table class='meta'>{body}</table>{note}"


def section_property() -> str:
    return f"<h2>1. The property</h2><p>{esc(PROPERTY)}</p>"


def section_invariants(inv: pd.DataFrame | None) -> str:
    head = ("<h2>2. The six invariants</h2><p>Checks and violations per scenario and strategy "
            "(<em>checks / violations</em>; unknown verdicts count as violations). The equivalence "
            "tolerance is derived from float32 rounding; each check's detail names its margin.</p>")
    if inv is None or inv.empty:
        return head + missing("invariants.csv")
    inv = inv.assign(passed=normalise_passed(inv["passed"]))
    rows, classes = [], []
    for (scenario, strategy), group in inv.groupby(["scenario", "strategy"], sort=True):
        row, cls = [scenario, strategy], ["", ""]
        for name in INVARIANTS:
            mine = group[group.invariant == name]
            bad = int((mine.passed != "true").sum())
            unknown = int((mine.passed == "unknown").sum())
            row.append(f"{len(mine)} / {bad}" + (f" ({unknown} unknown)" if unknown else ""))
            cls.append("" if len(mine) == 0 else ("ok" if bad == 0 else ("unknown" if unknown == bad else "bad")))
        rows.append(row)
        classes.append(cls)
    return head + table(["scenario", "strategy", *INVARIANTS], rows, classes)


def section_scenarios(steps: pd.DataFrame | None, faults: pd.DataFrame | None) -> str:
    head = ("<h2>3. Fault scenarios</h2><p>Loss and effective batch against step, ring and PS "
            "overlaid (identical schedules). Dotted lines mark injected faults (red: kill, purple: partition, "
            "orange: delay). A death "
            "shows twice: the batch drops and convergence pays; the epoch-end sawtooth is the short "
            "batch.</p>")
    parts = [head]
    if steps is None or steps.empty:
        parts.append(missing("steps.csv"))
        steps = pd.DataFrame(columns=["scenario"])
    for scenario, rows in steps.groupby("scenario", sort=False):
        events = faults[faults.scenario == scenario] if faults is not None and not faults.empty else None
        parts.append(f"<h3>{esc(scenario)}</h3>{scenario_text(str(scenario))}")
        parts.append(f'<img alt="{esc(scenario)}: loss and effective batch" '
                     f'src="{charts.scenario_chart(str(scenario), rows, events)}">')
    parts.append("<h3>Injected faults (faults.csv)</h3>")
    if faults is None:
        parts.append(missing("faults.csv"))
    elif faults.empty:
        parts.append("<p>No fault was injected in this run.</p>")
    else:
        parts.append(fault_tables(faults))
    return "\n".join(parts)


def scenario_text(name: str) -> str:
    """The named scenario's one-line description, if this installation knows it."""
    try:
        from mpibench.faults.scenarios import SCENARIOS

        text = SCENARIOS[name][0]
    except (ImportError, KeyError, IndexError, TypeError):
        return ""
    return f"<p>{esc(text)}</p>"


def fault_tables(faults: pd.DataFrame) -> str:
    """A count per scenario, strategy and kind, then every event behind a disclosure."""
    steps = pd.to_numeric(faults["step"], errors="coerce")
    summary = (faults.assign(step=steps).groupby(["scenario", "strategy", "kind"], sort=False)["step"]
               .agg(["count", "min", "max"]).reset_index())
    rows = [[r.scenario, r.strategy, r.kind, int(r["count"]),
             "" if pd.isna(r["min"]) else f"{int(r['min'])}–{int(r['max'])}"] for _, r in summary.iterrows()]
    cols = [c for c in ["scenario", "strategy", "step", "phase", "rank", "kind", "detail"] if c in faults.columns]
    return (table(["scenario", "strategy", "kind", "events", "steps"], rows)
            + f"<details><summary>all {len(faults)} events</summary>"
            + table(cols, faults[cols].values.tolist()) + "</details>")


def section_sweep(sweep: pd.DataFrame | None, sweep_findings: pd.DataFrame | None) -> str:
    head = "<h2>4. Sweep</h2><p>Random fault schedules; each row's command replays it exactly.</p>"
    if sweep is None:
        return head + missing("sweep.csv")
    cols = [c for c in ["case", "seed", "workers", "strategy", "recovery", "faults", "steps", "checks",
                        "violations", "first_violation", "outcome"] if c in sweep.columns]
    rows, classes = [], []
    for r in sweep.to_dict("records"):
        replay = f"<code>{esc(r.get('replay'))}</code>"
        if r.get("minimal_replay") and not pd.isna(r.get("minimal_replay")):
            replay += f"<br>minimal: <code>{esc(r.get('minimal_replay'))}</code>"
        rows.append([r.get(c) for c in cols] + [Markup(replay)])
        bad = str(r.get("violations", "0")) not in ("0", "0.0", "") or str(r.get("outcome", "ok")) not in ("ok", "nan")
        classes.append(["bad" if bad else "ok"] * (len(cols) + 1))
    text = head + table(cols + ["replay"], rows, classes)
    if sweep_findings is not None and not sweep_findings.empty:
        cols = [c for c in ["case", "outcome", "first_violation", "exit_status", "stderr_tail"]
                if c in sweep_findings.columns]
        text += "<h3>Cases that did not end cleanly (findings.csv)</h3>" + table(
            cols, sweep_findings[cols].values.tolist())
    return text


def section_calibration(info: dict, cal: Calibration | None) -> str:
    if cal is None:
        return missing("calibration in run.json")
    units = {"alpha_s": "s", "beta_s_per_byte": "s/byte", "alpha_step_s": "s", "beta_step_s_per_byte": "s/byte",
             "gamma_cache_s_per_byte": "s/byte", "gamma_memory_s_per_byte": "s/byte", "compute_fixed_s": "s",
             "compute_per_sample_s": "s/sample", "call_overhead_s": "s", "loop_overhead_s": "s",
             "one_rank_step_s": "ms by batch", "cores": "", "ranks_on_host": "", "other_load_cores": "cores"}
    rows = [[name, calibration_value(cal, name), unit, cal.how.get(name, "")] for name, unit in units.items()]
    text = "<h3>Calibration (measured in this run)</h3>" + table(["figure", "value", "unit", "how"], rows)
    return text + "<h3>Model assumptions</h3><ul>" + "".join(
        f"<li>{esc(a)}</li>" for a in costmodel.ASSUMPTIONS) + "</ul>"


def calibration_value(cal: Calibration, name: str):
    value = getattr(cal, name)
    if isinstance(value, dict):  # per batch size
        return ", ".join(f"{b}: {t * 1e3:.3g}" for b, t in sorted(value.items(), key=lambda kv: int(kv[0])))
    return value


def section_bench(info, cal, bench, scaling, comparison) -> str:
    parts = ["<h2>5. Benchmarks: measured and modelled</h2>",
             "<p>A <em>measured</em> figure was timed on real ranks; a <em>modelled</em> one comes from "
             "the alpha-beta-gamma model with the calibration below and the stated assumptions. Where "
             "they disagree by more than the tolerance the row is flagged with its likely cause.</p>",
             section_calibration(info, cal)]
    parts.append("<h3>Training step: scaling</h3>")
    if scaling is None or scaling.empty:
        parts.append(missing("scaling.csv"))
    else:
        parts.append(f'<img alt="scaling: step time and speedup" '
                     f'src="{charts.scaling_chart(scaling, cal.cores if cal else None)}">')
    parts.append("<h3>Collectives (bench.csv)</h3>")
    if bench is None or bench.empty:
        parts.append(missing("bench.csv"))
    else:
        parts.append(f'<img alt="collective time against size" src="{charts.bench_chart(bench)}">')
        parts.append(bench_side_by_side(bench))
    parts.append("<h3>Measured against modelled (comparison.csv)</h3>")
    if comparison is None or comparison.empty:
        parts.append(missing("comparison.csv"))
    else:
        if cal is not None:
            parts.append(model_summary(comparison, cal))
        parts.append(comparison_table(comparison))
    return "\n".join(parts)


def model_summary(comparison: pd.DataFrame, cal: Calibration) -> str:
    """Where the model's one-core-per-rank assumption holds and where it does not, in counts."""
    rows = []
    fits = comparison.ranks.astype(int) <= cal.cores
    for label, part in (("p ≤ cores (assumptions hold)", comparison[fits]),
                        ("p > cores (ranks share cores)", comparison[~fits])):
        if part.empty:
            continue
        within = part.within.astype(str).str.lower() == "true"
        codes = part.cause_codes.astype(str)
        rows.append([label, len(part), int(within.sum()), int((~within).sum()),
                     int(codes.str.contains("oversubscribed").sum()),
                     float(part.error.abs().median())])
    return table(["where", "points", "within tolerance", "flagged", "flagged: more ranks than cores",
                  "median |model error|"], rows)


def bench_side_by_side(bench: pd.DataFrame) -> str:
    keys = ["strategy", "ranks", "bytes"]
    measured = bench[bench.tag == "measured"].set_index(keys)
    modelled = bench[bench.tag == "modelled"].drop_duplicates(keys).set_index(keys)
    rows = []
    for key in sorted(set(measured.index) | set(modelled.index), key=lambda k: (str(k[0]), k[1], k[2])):
        m = measured.loc[[key]].iloc[0] if key in measured.index else None
        d = modelled.loc[[key]].iloc[0] if key in modelled.index else None
        rows.append([*key,
                     m.time_max_s * 1e6 if m is not None else "", d.time_max_s * 1e6 if d is not None else "",
                     m.busbw_gbps if m is not None else "", d.busbw_gbps if d is not None else "",
                     m.errors if m is not None else ""])
    return table(["strategy", "ranks", "bytes", "measured µs (slowest rank)", "modelled µs", "measured busbw GB/s",
                  "modelled busbw GB/s", "errors"], rows)


def comparison_table(comparison: pd.DataFrame) -> str:
    cols = ["kind", "strategy", "mode", "ranks", "bytes", "local_batch"]
    rows, classes = [], []
    for r in comparison.to_dict("records"):
        within = str(r["within"]).lower() == "true"
        flag = "within" if within else r["flag"]
        rows.append([r[c] for c in cols] + [r["measured_s"] * 1e3, r["modelled_s"] * 1e3, r["ratio"],
                                            f"{r['error']:+.0%}", flag, r["cause"]])
        classes.append([""] * len(cols) + ["", "", "", "ok" if within else "bad", "ok" if within else "bad", ""])
    note = (f"<p>Tolerance: |modelled − measured| ≤ {comparison.tolerance.iloc[0]:.0%} of measured. "
            "Ratio = measured / modelled. Modelled under: "
            f"{esc(comparison.assumptions.iloc[0])}.</p>")
    return note + table(cols + ["measured ms", "modelled ms", "ratio", "model error", "flag", "likely cause"],
                        rows, classes)


def section_not_violations() -> str:
    items = "".join(f"<li><strong>{esc(what)}</strong>: {esc(why)}.</li>" for what, why in NOT_VIOLATIONS)
    return f"<h2>6. Deliberately not violations</h2><ul>{items}</ul>"


def findings(info, inv, sweep, bench, scaling, comparison, sweep_findings=None) -> list[str]:
    """Every defect the run surfaced, one sentence each (HTML-escaped)."""
    found = []
    if inv is not None and not inv.empty:
        verdicts = normalise_passed(inv["passed"])
        for (scenario, strategy, name), group in inv[verdicts != "true"].groupby(
                ["scenario", "strategy", "invariant"], sort=True):
            first = group.sort_values("step").iloc[0]
            kind = "unknown verdict" if normalise_passed(group.passed).eq("unknown").all() else "violation"
            found.append(f"{kind}: invariant <strong>{esc(name)}</strong> under {esc(scenario)}/{esc(strategy)}, "
                         f"{len(group)} step(s), first at step {esc(first.step)} ({esc(first.detail)})"
                         + replay_hint(info, scenario, strategy))
    if sweep is not None and not sweep.empty and "violations" in sweep.columns:
        for r in sweep[pd.to_numeric(sweep.violations, errors="coerce").fillna(0) > 0].to_dict("records"):
            found.append(f"sweep case {esc(r.get('case'))}: {esc(r.get('violations'))} violation(s), first "
                         f"{esc(r.get('first_violation'))}; replay <code>{esc(r.get('replay'))}</code>")
    if sweep_findings is not None and not sweep_findings.empty and "outcome" in sweep_findings.columns:
        for r in sweep_findings[~sweep_findings.outcome.astype(str).isin(["ok", "violation"])].to_dict("records"):
            found.append(f"sweep case {esc(r.get('case'))} ended as <strong>{esc(r.get('outcome'))}</strong> "
                         f"(exit status {esc(r.get('exit_status'))}); replay <code>{esc(r.get('replay'))}</code>")
    if bench is not None and not bench.empty and "errors" in bench.columns:
        bad = bench[(bench.tag == "measured") & (pd.to_numeric(bench.errors, errors="coerce").fillna(0) > 0)]
        for r in bad.to_dict("records"):
            found.append(f"benchmark errors: {esc(r['strategy'])} on {esc(r['ranks'])} ranks, "
                         f"{esc(r['bytes'])} bytes: {esc(r['errors'])} wrong element(s)")
    if scaling is not None and not scaling.empty:
        bad = scaling[(scaling.tag == "measured") & (pd.to_numeric(scaling.violations, errors="coerce").fillna(0) > 0)]
        for r in bad.to_dict("records"):
            found.append(f"violation during the scaling run {esc(r['strategy'])} {esc(r['mode'])} "
                         f"p={esc(r['ranks'])}")
    if comparison is not None and not comparison.empty:
        for r in comparison[comparison.within.astype(str).str.lower() != "true"].to_dict("records"):
            where = f"{r['strategy']} {r['kind']}" + (f" ({r['mode']})" if r["mode"] else "")
            found.append(f"model disagreement: {esc(where)} on {esc(r['ranks'])} ranks, {esc(r['bytes'])} bytes: "
                         f"measured {r['measured_s'] * 1e3:.3g} ms vs modelled {r['modelled_s'] * 1e3:.3g} ms "
                         f"({esc(r['flag'])}); likely cause: {esc(r['cause'])}")
    return found


def replay_hint(info: dict, scenario: str, strategy: str) -> str:
    config = info.get("config")
    if not isinstance(config, dict):
        return ""
    try:
        from mpibench.config import RunConfig, replay_command

        names = RunConfig.__dataclass_fields__
        run = RunConfig(**{**{k: v for k, v in config.items() if k in names},
                           "scenario": scenario, "strategy": strategy})
        return f"; replay <code>{esc(replay_command(run, int(info.get('ranks', 1))))}</code>"
    except (TypeError, ValueError):
        return ""


def section_findings(found: list[str], checked: bool) -> str:
    if not found and not checked:
        return "<h2>7. Findings</h2><p>None in the files present; but no invariant was checked here.</p>"
    if not found:
        return "<h2>7. Findings</h2><p>None: every check passed and the model agreed within tolerance.</p>"
    return "<h2>7. Findings</h2><ol>" + "".join(f"<li>{f}</li>" for f in found) + "</ol>"


# ----------------------------------------------------------------------------- assembly
def build(out_dir: str) -> str:
    """Write ``out_dir/report.html`` from the files there; returns its path."""
    from .compare import comparison_frame, compare_collectives, compare_steps, run_load

    info = read_run_json(out_dir)
    cal = calibration_of(info)
    steps, inv, faults = (read_csv(out_dir, n) for n in ("steps.csv", "invariants.csv", "faults.csv"))
    sweep, bench, scaling = (read_csv(out_dir, n) for n in ("sweep.csv", "bench.csv", "scaling.csv"))
    comparison, sweep_findings = read_csv(out_dir, "comparison.csv"), read_csv(out_dir, "findings.csv")
    if comparison is None and cal is not None:  # rebuild it from the measurements if it can be
        options = info.get("model_options", {})
        rows = compare_steps(cal, scaling, options) + compare_collectives(cal, bench, options,
                                                                          run_load(cal, scaling))
        comparison = comparison_frame(rows) if rows else None
    found = findings(info, inv, sweep, bench, scaling, comparison, sweep_findings)
    body = "\n".join([
        section_header(info, out_dir), section_property(), section_invariants(inv),
        section_scenarios(steps, faults), section_sweep(sweep, sweep_findings),
        section_bench(info, cal, bench, scaling, comparison), section_not_violations(),
        section_findings(found, inv is not None and not inv.empty)])
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>mpibench report</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n")
    path = os.path.join(out_dir, "report.html")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        fh.write(page)
    os.replace(path + ".tmp", path)
    return path
