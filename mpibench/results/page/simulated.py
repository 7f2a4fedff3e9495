"""The simulated section: predictions at scale beside the analytic model, and p = 2 beside measured.

Reads ``simulated.csv`` (written by ``python -m mpibench predict DIR``, see
:mod:`mpibench.sim.predict`). Every figure here is labelled with its tag:
``simulated`` (played out on the simulator), ``modelled`` (the analytic
alpha-beta-gamma model) or ``measured`` (timed on this host's real ranks);
simulated figures are computed under the stated platform, never measured.
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import pandas as pd

from ..htmlparts import esc, num, table

TOLERANCE = 0.25  # p = 2: simulated within +-25 % of measured


def section(out_dir: str) -> str:
    head = "<h2 id='simulated'>Simulated (not measured)</h2>"
    path = os.path.join(out_dir, "simulated.csv")
    if not os.path.exists(path):
        return ""  # no predictions for this folder (python -m mpibench predict DIR makes them)
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    parts = [head, "<p>Figures tagged <b>simulated</b> are computed on a described platform by the simulator; "
                   "<b>modelled</b> ones by the analytic model over the same figures; <b>measured</b> ones were "
                   "timed on this host. They are shown side by side, never mixed.</p>"]
    parts.append(_host(frame[frame.kind == "host"]))
    parts.append(_scale(frame[frame.kind == "scale"]))
    parts.append(_crosscheck(CROSSCHECK_CSV))
    return "".join(parts)


# The round model beside SMPI (written by the lab's smpi_crosscheck study), shipped as package data
# so an installed page shows it too.
CROSSCHECK_CSV = Path(str(resources.files("mpibench.results") / "data" / "smpi_crosscheck.csv"))


def _crosscheck(path: Path) -> str:
    if not path.exists():
        return ""
    rows = pd.read_csv(path, keep_default_na=False, na_values=[""])
    body = [[r.platform, int(r.ranks), r.strategy, r.smpi_algorithm, int(r.bytes),
             num(r.predicted_s * 1e6), num(r.smpi_s * 1e6), num(r.ratio), r.note]
            for r in rows.itertuples()]
    return ("<h3>The round model beside SMPI, the same algorithm on the same platform [simulated, both]</h3>"
            "<p>SMPI (SimGrid's MPI) plays out every message of the algorithm of the same name on SimGrid's "
            "flow-level network model; neither side ran on a cluster. From "
            f"<code>{esc(path.name)}</code> (<code>benchmarks/smpi_crosscheck.py</code>).</p>"
            + table(["platform", "ranks", "strategy", "SMPI algorithm", "bytes", "round model us",
                     "SMPI us", "model / SMPI", "note"], body))


HOST_PARTS = (("compute_s", "compute"), ("sync_s", "reduction"), ("rest_s", "rest of step"),
              ("evidence_s", "evidence"), ("check_s", "step records"))
HOW_REPLAYED = ("<p>How the replay charges each part: a message costs alpha + n beta with the run's own "
                "calibration as a training step sees it (the ping-pong right after a local step), a library "
                "collective what the usual algorithms cost over the same figures; the simulator's own work "
                "inside a simulated MPI call is not charged; every other line a rank runs (the gradient, the "
                "strategy's packing, serving and applying, the loss statistics, the history writer, the step "
                "records) is charged its CPU time in the predicting process times <code>cpu_scale</code>, the "
                "run's measured compute part over a replay's at scale 1. So <b>compute is an input</b> (it "
                "agrees by construction); the reduction, the rest of the step, the evidence and the records are "
                "predicted. Not modelled: the host's jitter, a rank descheduled or woken late, which makes the "
                "other wait inside its reduction.</p>")


def _ms(value) -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return ""
    return num(value * 1e3) if value == value else ""


def _host(rows: pd.DataFrame) -> str:
    if rows.empty:
        return "<p class='missing'>No p = 2 comparison (the run has no fault-free steps).</p>"
    if "ranks" not in rows:
        rows = rows.assign(ranks=2)
    out, parts_shown = [], [(k, name) for k, name in HOST_PARTS if k in rows]
    for (strategy, ranks), group in rows.groupby(["strategy", "ranks"], sort=False):
        by_tag = {r.tag: r for r in group.itertuples()}
        m, s = by_tag.get("measured"), by_tag.get("simulated")
        measured, simulated = (float(m.step_s) if m is not None else None), (float(s.step_s) if s is not None else None)
        ratio = simulated / measured if measured and simulated else None
        within = "yes" if ratio is not None and abs(ratio - 1) <= TOLERANCE else "no"
        cells = [f"{_ms(getattr(m, k, None))} | {_ms(getattr(s, k, None))}" for k, _ in parts_shown]
        out.append([strategy, int(ranks), _ms(measured), _ms(simulated), num(ratio) if ratio else "", within, *cells])
    heads = [f"{name} ms [measured | simulated]" for _, name in parts_shown]
    return ("<h3>p = 1 and 2 on this host: the step, measured beside simulated</h3>"
            + table(["strategy", "ranks", "step ms [measured]", "step ms [simulated]", "simulated / measured",
                     f"within ±{TOLERANCE:.0%}", *heads], out)
            + (HOW_REPLAYED if parts_shown else ""))


def _scale(rows: pd.DataFrame) -> str:
    if rows.empty:
        return ""
    parts = []
    for (platform, nbytes), group in rows.groupby(["platform", "bytes"], sort=False):
        sim, mod = group[group.tag == "simulated"], group[group.tag == "modelled"]
        merged = sim.merge(mod, on=["strategy", "ranks"], suffixes=("_sim", "_mod"))
        body = [[r.strategy, int(r.ranks), num(r.sync_s_sim * 1e3), num(r.sync_s_mod * 1e3), num(r.step_s_sim * 1e3),
                 num(r.step_s_mod * 1e3), num(float(r.recovery_s_sim) * 1e3),
                 getattr(r, "notes_sim", "")] for r in merged.itertuples()]
        parts.append(f"<h3>{esc(platform)}: {int(nbytes):,} bytes of gradient</h3>"
                     + table(["strategy", "ranks", "sync ms [simulated]", "sync ms [modelled]",
                              "step ms [simulated]", "step ms [modelled]", "death + recovery ms [simulated]",
                              "notes"], body))
    return "".join(parts)
