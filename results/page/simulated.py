"""The simulated section: predictions at scale beside the analytic model, and p = 2 beside measured.

Reads ``simulated.csv`` (written by ``python -m mpibench predict DIR``, see
:mod:`mpibench.sim.predict`). Every figure here is labelled with its tag:
``simulated`` (played out on the simulator), ``modelled`` (the analytic
alpha-beta-gamma model) or ``measured`` (timed on this host's real ranks);
simulated figures are computed under the stated platform, never measured.
"""
from __future__ import annotations

import os

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
    return "".join(parts)


def _host(rows: pd.DataFrame) -> str:
    if rows.empty:
        return "<p class='missing'>No p = 2 comparison (the run has no fault-free steps).</p>"
    out = []
    for strategy, group in rows.groupby("strategy", sort=False):
        by_tag = dict(zip(group.tag, group.step_s))
        measured, simulated = by_tag.get("measured"), by_tag.get("simulated")
        ratio = simulated / measured if measured and simulated else None
        within = "yes" if ratio is not None and abs(ratio - 1) <= TOLERANCE else "no"
        out.append([strategy, num(measured * 1e3) if measured else "", num(simulated * 1e3) if simulated else "",
                    num(ratio) if ratio else "", within])
    return ("<h3>p = 2 on this host: step time, measured beside simulated</h3>"
            + table(["strategy", "measured ms", "simulated ms", "simulated / measured",
                     f"within ±{TOLERANCE:.0%}"], out))


def _scale(rows: pd.DataFrame) -> str:
    if rows.empty:
        return ""
    parts = []
    for (platform, nbytes), group in rows.groupby(["platform", "bytes"], sort=False):
        sim, mod = group[group.tag == "simulated"], group[group.tag == "modelled"]
        merged = sim.merge(mod, on=["strategy", "ranks"], suffixes=("_sim", "_mod"))
        body = [[r.strategy, int(r.ranks), num(r.sync_s_sim * 1e3), num(r.sync_s_mod * 1e3), num(r.step_s_sim * 1e3),
                 num(r.step_s_mod * 1e3), num(float(r.recovery_s_sim) * 1e3)] for r in merged.itertuples()]
        parts.append(f"<h3>{esc(platform)}: {int(nbytes):,} bytes of gradient</h3>"
                     + table(["strategy", "ranks", "sync ms [simulated]", "sync ms [modelled]",
                              "step ms [simulated]", "step ms [modelled]", "death + recovery ms [simulated]"], body))
    return "".join(parts)
