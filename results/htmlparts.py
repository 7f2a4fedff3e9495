"""Small HTML helpers for the report: escaping, number formatting, tables."""
from __future__ import annotations

import html

import pandas as pd


CONTROL_CHARS = dict.fromkeys(c for c in range(32) if chr(c) not in "\t\n\r")


def esc(value) -> str:
    """HTML-escaped text, without control characters (an MPI version string ends in NUL)."""
    text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
    return html.escape(text.translate(CONTROL_CHARS))


def fmt(value, digits: int = 3) -> str:
    if isinstance(value, float):
        if pd.isna(value):
            return ""
        return f"{value:.{digits}g}"
    return esc(value)


def table(header: list[str], rows: list[list], classes: list[list[str]] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>"]
    for i, row in enumerate(rows):
        cells = []
        for j, cell in enumerate(row):
            cls = (classes[i][j] if classes else "") or ""
            if isinstance(cell, (int, float)) and not isinstance(cell, bool):
                cls = (cls + " num").strip()
            text = cell if isinstance(cell, Markup) else fmt(cell)
            cells.append(f'<td class="{cls}">{text}</td>' if cls else f"<td>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out) + "</table>"


class Markup(str):
    """Already-escaped HTML for a table cell."""


def missing(name: str) -> str:
    return f'<p class="missing">No {esc(name)} in this folder: this part did not run.</p>'
