"""Benchmark charts for the report, drawn with matplotlib's Agg back-end and inlined as base64 PNG.

(The scenario charts are inline SVG: see :mod:`mpibench.results.scenario_svg`.)

Each function takes pandas frames and returns a ``data:`` URI, so the report
stays one self-contained file that opens without network access.
"""
from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the back-end must be chosen first)
import pandas as pd  # noqa: E402

from mpibench.sync.registry import drawn_names  # noqa: E402

DPI = 80
PALETTE = plt.rcParams["axes.prop_cycle"].by_key()["color"]


# One colour per name the charts draw, none repeated (the palette has ten); a plugged-in
# strategy beyond them takes one from a second palette by its name.
COLOUR_ORDER = drawn_names()
EXTRA = plt.get_cmap("tab20b").colors


def colour_of(strategy: str) -> str:
    if strategy in COLOUR_ORDER:
        return PALETTE[COLOUR_ORDER.index(strategy) % len(PALETTE)]
    return matplotlib.colors.to_hex(EXTRA[sum(map(ord, strategy)) % len(EXTRA)])


def compact_legend(ax, strategies, tags) -> None:
    """One entry per strategy (its colour) and one per tag (its line style), outside the axes,
    so the legend neither covers the largest sizes' points nor repeats every pair."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colour_of(s), lw=3, label=s) for s in strategies]
    handles += [Line2D([], [], color="black", ls="-" if t == "measured" else "--",
                       marker="o" if t == "measured" else "x", label=t) for t in tags]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def to_data_uri(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def scaling_chart(scaling: pd.DataFrame, cores: int | None) -> str:
    """Step time and speedup against p, measured (solid) and modelled (dashed), per mode."""
    modes = [m for m in ("strong", "weak") if m in set(scaling["mode"])]
    fig, axes = plt.subplots(2, len(modes), figsize=(5 * len(modes), 6.4), squeeze=False)
    for col, mode in enumerate(modes):
        time_ax, speed_ax = axes[0][col], axes[1][col]
        rows = scaling[scaling["mode"] == mode]
        for (strategy, tag), line in rows.groupby(["strategy", "tag"], sort=True):
            line = line.sort_values("ranks")
            style = "-o" if tag == "measured" else "--x"
            colour = colour_of(str(strategy))
            time_ax.plot(line.ranks, line.step_time_s * 1e3, style, color=colour, label=f"{strategy} {tag}")
            speed_ax.plot(line.ranks, pd.to_numeric(line.speedup, errors="coerce"), style, color=colour,
                          label=f"{strategy} {tag}")
        top = int(rows.ranks.max())
        speed_ax.plot([1, top], [1, top], ":", color="grey", label="ideal")
        for ax in (time_ax, speed_ax):
            if cores and top > cores:
                ax.axvspan(cores + 0.5, top + 0.5, color="#f5b7b1", alpha=0.3, label="ranks > cores")
            ax.set_xscale("log", base=2)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        time_ax.set(title=f"{mode} scaling: step time", xlabel="ranks p", ylabel="ms per step")
        speed_ax.set(title=f"{mode} scaling: speedup", xlabel="ranks p", ylabel="speedup over p=1")
    fig.tight_layout()
    return to_data_uri(fig)


def bench_chart(bench: pd.DataFrame) -> str:
    """Collective time against size at the largest rank count, measured vs modelled."""
    ranks = int(bench.ranks.max())
    rows = bench[bench.ranks == ranks]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for (strategy, tag), line in rows.groupby(["strategy", "tag"], sort=True):
        line = line.sort_values("bytes")
        ax.plot(line.bytes, line.time_max_s * 1e6, "-o" if tag == "measured" else "--x",
                color=colour_of(str(strategy)), label=f"{strategy} {tag}")
    ax.set(xscale="log", yscale="log", xlabel="bytes", ylabel="microseconds",
           title=f"collective time on {ranks} ranks")
    ax.grid(alpha=0.3, which="both")
    compact_legend(ax, sorted(set(rows.strategy.astype(str)), key=_draw_order), sorted(set(rows.tag.astype(str))))
    return to_data_uri(fig)


def _draw_order(strategy: str) -> tuple:
    return (COLOUR_ORDER.index(strategy) if strategy in COLOUR_ORDER else len(COLOUR_ORDER), strategy)
