"""Small HTML helpers for the report: escaping, number formatting, tables."""
from __future__ import annotations

import html
import math

import pandas as pd


CONTROL_CHARS = dict.fromkeys(c for c in range(32) if chr(c) not in "\t\n\r")


def esc(value) -> str:
    """HTML-escaped text, without control characters (an MPI version string ends in NUL)."""
    text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
    return html.escape(text.translate(CONTROL_CHARS))


def num(value: float, digits: int = 3) -> str:
    """A number as a reader writes it: 1024 (not 1.02e+03), 0.0123, 3.2e-05 only when tiny."""
    if isinstance(value, bool) or value is None:
        return esc(value)
    v = float(value)
    if not math.isfinite(v):
        return "" if math.isnan(v) else str(v)
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    if abs(v) < 1e-3 or abs(v) >= 1e9:
        return f"{v:.{digits}g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    text = f"{v:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt(value, digits: int = 3) -> str:
    if isinstance(value, (float, int)) and not isinstance(value, bool):
        if isinstance(value, float) and pd.isna(value):
            return ""
        return num(value, digits)
    return esc(value)


def human_bytes(n) -> str:
    """4096 -> 4 KiB, 76844 -> 75 KiB (whole binary multiples when exact, else 3 digits)."""
    try:
        n = float(n)
    except (TypeError, ValueError):
        return esc(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{num(n / size)} {unit}"
    return f"{num(n)} B"


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
