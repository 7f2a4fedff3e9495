"""The collectives chart: one colour per strategy with none repeated, and a legend of one entry
per strategy plus one per tag (not one per pair), kept outside the plotted points."""
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from mpibench.results import charts
from mpibench.sync.registry import BUILTIN

STRATEGIES = ["blocking", "c_floor", "native", "ring", "ps", "rd", "rabenseifner", "hier", "auto"]


def test_every_strategy_the_benchmarks_draw_has_a_colour_of_its_own():
    names = sorted(set(STRATEGIES) | set(BUILTIN) | {"blocking", "c_floor"})
    colours = [charts.colour_of(n) for n in names]
    assert len(set(colours)) == len(colours), dict(zip(names, colours))


def bench_rows(strategies):
    return pd.DataFrame([{"strategy": s, "ranks": 2, "bytes": b, "time_max_s": 1e-5 * (i + 1) * b / 4096,
                          "tag": tag} for i, s in enumerate(strategies) for b in (4096, 65536, 1 << 20)
                         for tag in ("measured", "modelled")])


@pytest.mark.parametrize("count", [1, 4, len(STRATEGIES)])
def test_legend_has_one_entry_per_strategy_and_per_tag_outside_the_axes(monkeypatch, count):
    seen = {}
    real = charts.to_data_uri

    def keep(fig):
        ax = fig.axes[0]
        legend = ax.get_legend()
        seen["labels"] = [t.get_text() for t in legend.get_texts()]
        fig.canvas.draw()
        box, axes_box = legend.get_window_extent(), ax.get_window_extent()
        seen["outside"] = box.x0 >= axes_box.x1
        return real(fig)

    monkeypatch.setattr(charts, "to_data_uri", keep)
    charts.bench_chart(bench_rows(STRATEGIES[:count]))
    labels = seen["labels"]
    assert sorted(labels[:-2]) == sorted(STRATEGIES[:count]) and labels[-2:] == ["measured", "modelled"], labels
    assert seen["outside"]
    plt.close("all")
