"""report.html: the run's correctness report, built from the files in one run's folder.

The first screen answers the question: one verdict (from the checker's
verdict.json, else from invariants.csv) with its counts, the first violation
and the command that replays it, then every case in a scenario x strategy x
recovery matrix in plan order. Below: each scenario's charts as small
multiples against the no-fault baseline, the sweep, the run's findings
grouped by cause, the benchmarks against the model, and what is checked. The page is one file with inline CSS, inline SVG and PNG charts:
no scripts, no network. Parts live in :mod:`mpibench.results.page`.
"""
from __future__ import annotations

import os
import time
from datetime import datetime, timezone

import pandas as pd

from .htmlparts import esc
from . import inputs
from .inputs import RunFiles, disagreements, load
from .page import banner, bench, findings, launch, matrix, scenarios, simulated, sweep
from .page.verdict import verdict_of

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
body{font-family:system-ui,sans-serif;margin:1em auto;max-width:1340px;padding:0 1em;color:#222;line-height:1.35}
h1{margin:0;font-size:22px}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
h3{margin:.3em 0}.meta-line{color:#555;font-size:13px;margin:.2em 0 .6em}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{background:#e8f6e8}.bad{background:#fbe3e0}.unknown{background:#fff3cd}
.missing{color:#777;font-style:italic}code{font-size:12px;background:#f6f6f6;padding:1px 3px;word-break:break-all}
img{max-width:100%;display:block;margin:.5em 0}.meta td{border:none;padding:1px 8px 1px 0}
.banner{border-radius:6px;padding:.6em 1em;margin:.4em 0;border:2px solid}
.banner .word{font-size:28px;font-weight:700;margin-right:.6em}.banner .counts{font-size:16px}
.banner.pass{background:#e3f4e3;border-color:#2e8b3d}.banner.pass .word{color:#1f6e2c}
.banner.fail{background:#fbe0dc;border-color:#c0392b}.banner.fail .word{color:#a02818}
.banner.unknown{background:#fff3cd;border-color:#d4a017}.banner.unknown .word{color:#8a6d00}
.banner.unjudged{background:#eef1f5;border-color:#7a8699}.banner.unjudged .word{color:#3d4a5c}
.banner.measured{background:#eef1f5;border-color:#7a8699}.banner.measured .word{color:#3d4a5c}
.banner .source{font-size:11px;color:#666}.warning{background:#fff3cd;border:1px solid #d4a017;padding:.3em .6em}
table.matrix td.cell{padding:0}table.matrix td.cell a{display:block;padding:2px 8px;color:inherit;text-decoration:none}
table.matrix td.pass{background:#cdeccd}table.matrix td.fail{background:#f5b7b1;font-weight:600}
table.matrix td.unknown{background:#ffe699}table.matrix th.row a{color:#222;text-decoration:none}
.matrix-note{font-size:12px;color:#555;margin:.3em 0 0}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(650px,1fr));gap:10px}
.panel{border:1px solid #ddd;border-radius:4px;padding:4px 8px}.panel p{margin:.15em 0;font-size:12.5px}
.panel svg{font-size:10px;font-family:system-ui,sans-serif;max-width:100%;height:auto}.panel .what{color:#555}
.legend{font-size:12px;margin:.4em 0}.legend span{margin-right:1.2em;white-space:nowrap}
.legend svg{vertical-align:middle;margin-right:3px}
nav a{margin-right:1em;font-size:13px}
"""


def read_csv(out_dir: str, name: str) -> pd.DataFrame | None:
    """``out_dir/name`` as a frame (None when absent or empty); for the job that writes the files."""
    return inputs.read_csv(os.path.join(out_dir, name), name)


# ----------------------------------------------------------------------------- small sections
def header(files: RunFiles) -> str:
    info = files.info
    mpi, ulfm = info.get("mpi", {}), info.get("ulfm", {})
    config = info.get("config", {}) if isinstance(info.get("config"), dict) else {}
    job = "main job" if config.get("job") == "main" or info.get("plan") else (
        f"run of {config.get('scenario')} under {config.get('strategy')}" if config else "")
    bits = [job, f"seed {info.get('seed')}" if info.get("seed") is not None else "",
            f"{info.get('ranks')} ranks" if info.get("ranks") else "",
            f"{config.get('steps')} steps" if config.get("steps") else "",
            " ".join(info.get("hosts", [])), f"{info.get('cores_on_this_host')} cores"
            if info.get("cores_on_this_host") else "", (mpi.get("library") or "")[:40],
            "ULFM on" if ulfm.get("active") else ("ULFM off" if ulfm else ""),
            f"folder {os.path.realpath(files.out_dir)}",
            "built " + datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")]
    line = " · ".join(esc(b) for b in bits if b)
    note = "" if info else " <span class='missing'>(no run.json in this folder)</span>"
    return f"<h1>mpibench correctness report</h1><div class='meta-line'>{line}{note}</div>"


def nav() -> str:
    links = [("scenarios", "scenarios"), ("sweep", "sweep"), ("findings", "findings"),
             ("bench", "benchmarks"), ("checked", "what is checked")]
    return "<nav>" + "".join(f"<a href='#{a}'>{t}</a>" for a, t in links) + "</nav>"


def section_checked(inv: pd.DataFrame | None) -> str:
    parts = [f"<h2 id='checked'>What is checked</h2><p>{esc(PROPERTY)}</p>"]
    if inv is not None and not inv.empty:
        passed = inv.passed.astype(str).str.strip().str.lower()
        rows = []
        for name in list(dict.fromkeys([*INVARIANTS, *inv.invariant.astype(str)])):
            mine = passed[inv.invariant.astype(str) == name]
            rows.append(f"<tr><td>{esc(name)}</td><td class='num'>{len(mine)}</td>"
                        f"<td class='num'>{int((mine == 'false').sum())}</td>"
                        f"<td class='num'>{int((mine == 'unknown').sum())}</td></tr>")
        parts.append("<table><tr><th>invariant</th><th>checks</th><th>violated</th><th>no verdict</th></tr>"
                     + "".join(rows) + "</table>")
    items = "".join(f"<li><strong>{esc(what)}</strong>: {esc(why)}.</li>" for what, why in NOT_VIOLATIONS)
    return "".join(parts) + f"<h3>Deliberately not violations</h3><ul>{items}</ul>"


# ----------------------------------------------------------------------------- assembly
def comparison_of(files: RunFiles, cal) -> pd.DataFrame | None:
    """comparison.csv, or rebuilt from the measurements when it is missing and they are there."""
    comparison = files["comparison.csv"]
    if comparison is None and cal is not None:
        from .compare import comparison_frame, compare_collectives, compare_steps, run_load

        options = files.info.get("model_options", {})
        rows = compare_steps(cal, files["scaling.csv"], options) + compare_collectives(
            cal, files["bench.csv"], options, run_load(cal, files["scaling.csv"]))
        comparison = comparison_frame(rows) if rows else None
    return comparison


def build(out_dir: str, progress=None) -> str:
    """Write ``out_dir/report.html`` from the files there; returns its path.

    ``progress`` (optional) gets one short line per stage. Raises
    ReportInputError when the folder holds no results or a file is unreadable.
    """
    say = progress or (lambda text: None)
    start = time.perf_counter()
    files = load(out_dir)
    say("read " + ", ".join(f"{n} ({files.rows(n)} rows)" for n in files.frames if files[n] is not None)
        + (", verdict.json" if files.verdict is not None else ""))
    verdict = verdict_of(files)
    cal = bench.calibration_of(files.info)
    comparison = comparison_of(files, cal)
    say(f"verdict {verdict.verdict} over {len(verdict.cases)} cases; drawing the scenarios")
    scenario_html = scenarios.section(files, say)
    say("benchmarks and findings")
    body = "\n".join([
        header(files), banner.banner(verdict, disagreements(files)), launch.section(files.info),
        matrix.matrix(verdict), nav(),
        scenario_html, sweep.section(files), findings.section(files, verdict, comparison),
        bench.section(files, cal, comparison), simulated.section(out_dir),
        section_checked(files["invariants.csv"])])
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>mpibench report</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n")
    path = os.path.join(out_dir, "report.html")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        fh.write(page)
    os.replace(path + ".tmp", path)
    say(f"{len(page.encode()):,} bytes in {time.perf_counter() - start:.1f} s")
    return path
