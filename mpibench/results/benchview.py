"""The benchmark section's data: every candidate against the blocking baseline, per size.

For the report (:mod:`.report` calls :func:`section_html`): a chart of each
candidate's speed relative to the blocking ``MPI_Allreduce`` against message
size (log axes; the model's ratio dashed), and the table behind it. Ratios
are ``vs_blocking`` from ``bench.csv``: medians over rounds of per-round
ratios, > 1 faster than the blocking call. Rows at p = 1 are left out: no
communication happens there, so they say nothing about bandwidth. A
``bench --launches`` folder's ``bench.csv`` also holds each ratio's 95 %
interval over launches and its verdict (:mod:`.launchtable`): the chart draws
the interval as an error bar and the table gives both.
"""
from __future__ import annotations

import html

import pandas as pd

COLUMNS = ["strategy", "ranks", "bytes", "time_s", "modelled_s", "vs_blocking", "modelled_vs_blocking",
           "vs_c_floor", "vs_blocking_low", "vs_blocking_high", "verdict"]


def vs_blocking_frame(bench: pd.DataFrame | None) -> pd.DataFrame:
    """One row per measured candidate x ranks x size (p >= 2), with its model twin's figures."""
    if bench is None or bench.empty or "vs_blocking" not in bench.columns:
        return pd.DataFrame(columns=COLUMNS)
    frame = bench.assign(**{c: pd.to_numeric(bench[c], errors="coerce")
                            for c in ("ranks", "bytes", "time_max_s", "vs_blocking")})
    frame = frame[frame.ranks >= 2]
    keys = ["strategy", "ranks", "bytes"]
    measured = frame[frame.tag == "measured"].drop_duplicates(keys, keep="last").set_index(keys)
    modelled = frame[frame.tag == "modelled"].drop_duplicates(keys, keep="last").set_index(keys)
    rows = []
    for key, m in measured.iterrows():
        model_t = modelled.time_max_s.get(key)
        model_blk = modelled.time_max_s.get(("blocking",) + key[1:])
        floor_t = measured.time_max_s.get(("c_floor",) + key[1:])
        rows.append({"strategy": key[0], "ranks": key[1], "bytes": key[2], "time_s": m.time_max_s,
                     "modelled_s": model_t, "vs_blocking": m.vs_blocking,
                     "modelled_vs_blocking": model_blk / model_t if model_t and model_blk else None,
                     "vs_c_floor": floor_t / m.time_max_s if floor_t and m.time_max_s else None,
                     "vs_blocking_low": m.get("vs_blocking_low"), "vs_blocking_high": m.get("vs_blocking_high"),
                     "verdict": m.get("verdict")})
    return pd.DataFrame(rows, columns=COLUMNS)


def ratio_chart(view: pd.DataFrame) -> str:
    """Speed relative to the blocking call against size, at the largest rank count (data URI)."""
    from .charts import colour_of, plt, to_data_uri

    ranks = int(view.ranks.max())
    rows = view[view.ranks == ranks]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for strategy, line in rows.groupby("strategy", sort=True):
        line = line.sort_values("bytes")
        colour = colour_of(str(strategy))
        ax.plot(line.bytes, line.vs_blocking, "-o", color=colour, label=f"{strategy} measured")
        low, high = (pd.to_numeric(line[c], errors="coerce") for c in ("vs_blocking_low", "vs_blocking_high"))
        if low.notna().any():  # the 95 % interval over launches
            ax.errorbar(line.bytes, line.vs_blocking, yerr=[(line.vs_blocking - low).clip(lower=0),
                        (high - line.vs_blocking).clip(lower=0)], fmt="none", ecolor=colour, capsize=3)
        model = pd.to_numeric(line.modelled_vs_blocking, errors="coerce")
        if model.notna().any():
            ax.plot(line.bytes, model, "--", color=colour, alpha=0.6, label=f"{strategy} modelled")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set(xscale="log", yscale="log", xlabel="bytes", ylabel="x blocking MPI_Allreduce (>1 faster)",
           title=f"against the blocking call on {ranks} ranks")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    return to_data_uri(fig)


def section_html(bench: pd.DataFrame | None) -> str:
    """Chart and table, or an empty string when the run has no p >= 2 rows with ratios."""
    from mpibench.base.units import human_bytes

    view = vs_blocking_frame(bench)
    if view.empty:
        return ""

    def cell(value, fmt):
        return "" if value is None or pd.isna(value) else format(value, fmt)
    launches = pd.to_numeric(view.vs_blocking_low, errors="coerce").notna().any()
    body = "".join(
        f"<tr><td>{html.escape(str(r.strategy))}</td><td>{int(r.ranks)}</td><td>{human_bytes(int(r.bytes))}</td>"
        f"<td>{cell(r.time_s * 1e6, '.1f')}</td><td>{cell(r.modelled_s and r.modelled_s * 1e6, '.1f')}</td>"
        f"<td>{cell(r.vs_blocking, '.2f')}</td><td>{cell(r.modelled_vs_blocking, '.2f')}</td>"
        f"<td>{cell(r.vs_c_floor, '.2f')}</td>"
        + (f"<td>{_interval(r)}</td><td>{html.escape(str(r.verdict or ''))}</td>" if launches else "")
        + "</tr>" for r in view.itertuples(index=False))
    note = ("" if launches else "<p>These figures come from one launch. Launches of one job can land in "
            "states several-fold apart on a shared host; <code>bench</code>'s option <code>--launches 6</code> "
            "(run without mpirun, <code>--np</code> for the ranks) repeats the job and gives each ratio a "
            "95 % interval across launches and a verdict "
            "(faster, slower, indistinguishable or cannot tell).</p>")
    return (f'<h3>Against the blocking MPI_Allreduce</h3>{note}<img alt="speed relative to the blocking call" '
            f'src="{ratio_chart(view)}"><table><tr><th>candidate</th><th>p</th><th>size</th>'
            f"<th>measured us</th><th>modelled us</th><th>x blocking</th><th>modelled x blocking</th>"
            f"<th>x C floor</th>" + ("<th>95 % interval over launches</th><th>verdict</th>" if launches else "")
            + f"</tr>{body}</table>")


def _interval(row) -> str:
    low, high = row.vs_blocking_low, row.vs_blocking_high
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return ""
    return f"[{float(low):.2f}, {float(high):.2f}]"
