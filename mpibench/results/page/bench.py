"""Benchmarks: calibration, scaling and collective charts, and measured against modelled.

The comparison is one short line per figure: the model error (the quantity the
tolerance applies to), a verdict computed from that same error, and the likely
causes as short codes explained once below the table, with each row's full
sentence on hover. The model's assumptions are printed once.
"""
from __future__ import annotations

import math

import pandas as pd

from .. import charts, costmodel
from ..calibration import Calibration
from ..htmlparts import Markup, esc, human_bytes, missing, num, table
from ..inputs import RunFiles
from .stepstack import stack_section

CODE_TEXT = {
    "oversubscribed": "more ranks than cores: ranks time-share cores, the model assumes one core per rank",
    "host_busy": "other processes kept cores busy while this run measured",
    "straggler": "a slow tail well above the typical time (one late rank holds up a synchronous step)",
    "latency_bound": "latency-bound size: the modelled time is mostly alpha; per-call overheads beyond a "
                     "ping-pong dominate",
    "memory_bandwidth": "memory bandwidth: many ranks reduce large buffers at once; gamma was measured on one rank",
    "faster": "faster than modelled: the implementation beats the modelled algorithm, or the ping-pong "
              "overestimates alpha/beta",
    "unexplained": "slower than modelled and none of the known causes shows in the data",
    **{f"part_{name}": f"the step's {what} part is off its model by much of the step (see the stack above)"
       for name, what in (("compute", "compute"), ("reduction", "reduction"), ("commit", "commit agreement"),
                          ("evidence", "evidence-writing"), ("check", "check"), ("wait", "wait-for-the-last-rank"))},
}
UNITS = {"alpha_s": "s", "beta_s_per_byte": "s/byte", "alpha_step_s": "s", "beta_step_s_per_byte": "s/byte",
         "gamma_cache_s_per_byte": "s/byte", "gamma_memory_s_per_byte": "s/byte", "compute_fixed_s": "s",
         "compute_per_sample_s": "s/sample", "call_overhead_s": "s", "loop_overhead_s": "s",
         "one_rank_step_s": "ms by batch", "cores": "", "ranks_on_host": "", "other_load_cores": "cores"}


def calibration_of(info: dict) -> Calibration | None:
    data = info.get("calibration")
    return Calibration.from_dict(data) if isinstance(data, dict) and "alpha_s" in data else None


def section(files: RunFiles, cal: Calibration | None, comparison: pd.DataFrame | None) -> str:
    bench, scaling = files["bench.csv"], files["scaling.csv"]
    parts = ["<h2 id='bench'>Benchmarks: measured and modelled</h2>",
             "<p>A <em>measured</em> figure was timed on real ranks; a <em>modelled</em> one comes from the "
             "alpha-beta-gamma model with this run's calibration and the assumptions below.</p>"]
    parts.append("<h3>Training step: scaling</h3>")
    if scaling is None or scaling.empty:
        parts.append(missing("scaling.csv"))
    else:
        parts.append(f'<img alt="scaling: step time and speedup" '
                     f'src="{charts.scaling_chart(scaling, cal.cores if cal else None)}">')
        parts.append(stack_section(scaling))
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
        parts.append(comparison_table(comparison))
    parts.append(calibration_table(cal))
    return "\n".join(parts)


def calibration_table(cal: Calibration | None) -> str:
    if cal is None:
        return missing("calibration in run.json")
    rows = [[name, calibration_value(cal, name), unit, cal.how.get(name, "")] for name, unit in UNITS.items()]
    assumptions = "".join(f"<li>{esc(a)}</li>" for a in costmodel.ASSUMPTIONS)
    return ("<details><summary>Calibration (measured in this run)</summary>"
            + table(["figure", "value", "unit", "how"], rows) + "</details>"
            + f"<h3>Model assumptions</h3><ul class='assumptions'>{assumptions}</ul>")


def calibration_value(cal: Calibration, name: str):
    value = getattr(cal, name)
    if isinstance(value, dict):  # per batch size
        return ", ".join(f"{b}: {num(t * 1e3)}" for b, t in sorted(value.items(), key=lambda kv: int(kv[0])))
    return value


def bench_side_by_side(bench: pd.DataFrame) -> str:
    keys = ["strategy", "ranks", "bytes"]
    measured = bench[bench.tag == "measured"].drop_duplicates(keys).set_index(keys)
    modelled = bench[bench.tag == "modelled"].drop_duplicates(keys).set_index(keys)
    rows = []
    for key in sorted(set(measured.index) | set(modelled.index), key=lambda k: (str(k[0]), k[1], k[2])):
        m = measured.loc[key] if key in measured.index else None
        d = modelled.loc[key] if key in modelled.index else None
        rows.append([key[0], key[1], human_bytes(key[2]),
                     m.time_max_s * 1e6 if m is not None else "", d.time_max_s * 1e6 if d is not None else "",
                     m.busbw_gbps if m is not None and "busbw_gbps" in m else "",
                     m.errors if m is not None and "errors" in m else "", _band(d)])
    return table(["strategy", "ranks", "size", "measured µs (slowest rank)", "modelled µs",
                  "measured busbw GB/s", "wrong elements", "model's alpha-beta band"], rows)


def _band(modelled) -> str:
    """The band a modelled row's note names (job/bench/model.py), else nothing."""
    note = str(modelled.get("note", "")) if modelled is not None else ""
    found = [part.strip()[len("model band "):] for part in note.split(";") if part.strip().startswith("model band ")]
    return found[0] if found else ""


def _text(value) -> str:
    """A CSV cell as text; an empty cell (NaN once read) is empty, never 'nan'."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _tolerance(value, default: float = 0.25) -> float:
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return default if pd.isna(number) else float(number)


def comparison_table(comparison: pd.DataFrame) -> str:
    codes_seen: dict[str, int] = {}
    rows, classes, tolerances = [], [], set()
    for r in comparison.to_dict("records"):
        measured, modelled = float(r["measured_s"]), float(r["modelled_s"])
        error = (modelled - measured) / measured if measured > 0 else float("inf")
        tolerance = _tolerance(r.get("tolerance"))  # each row's own (it differs between p = 1 and p > 1)
        tolerances.add(tolerance)
        within = abs(error) <= tolerance  # the verdict is computed from the figure printed beside it
        codes = [] if within else _text(r.get("cause_codes")).split()
        for code in codes:
            codes_seen[code] = codes_seen.get(code, 0) + 1
        verdict = f"within ±{tolerance:.0%}" if within else Markup(
            f'<span title="{esc(_text(r.get("cause")))}">{esc(", ".join(codes) or "off")}</span>')
        size = human_bytes(r["bytes"]) if str(r.get("bytes", "")).strip() not in ("", "nan") else ""
        rows.append([r["kind"], r["strategy"], r.get("mode") or "", r["ranks"], size,
                     r.get("local_batch") if str(r.get("local_batch", "")) not in ("", "nan") else "",
                     measured * 1e3, modelled * 1e3, f"{error:+.0%}", verdict])
        classes.append([""] * 8 + ["ok" if within else "bad"] * 2)
    legend = "".join(f"<li><code>{esc(code)}</code> ({n} row{'s' if n > 1 else ''}): "
                     f"{esc(CODE_TEXT.get(code, code))}</li>" for code, n in codes_seen.items())
    flagged = sum(1 for c in classes if c[-1] == "bad")
    stated = " or ".join(f"{t:.0%}" for t in sorted(tolerances)) or "25%"
    note = (f"<p>{len(rows)} figures, {flagged} outside the tolerance: |modelled − measured| ≤ {stated} "
            "of measured (each row's own, as in comparison.csv). Model error = (modelled − measured) / measured; "
            "the flag's causes are explained "
            "below the table (hover a flag for the row's own numbers).</p>")
    return (note + table(["kind", "strategy", "mode", "ranks", "size", "local batch", "measured ms",
                          "modelled ms", "model error", "verdict / likely causes"], rows, classes)
            + (f"<ul class='causes'>{legend}</ul>" if legend else ""))
