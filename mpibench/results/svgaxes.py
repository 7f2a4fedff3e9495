"""Axis arithmetic for hand-drawn SVG charts: linear scales, round tick values, padded ranges."""
from __future__ import annotations

import math


def nice_ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if step * m >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


class Scale:
    def __init__(self, lo: float, hi: float, out_lo: float, out_hi: float):
        if not (math.isfinite(lo) and math.isfinite(hi)):
            lo, hi = 0.0, 1.0
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        self.lo, self.hi, self.out_lo, self.out_hi = lo, hi, out_lo, out_hi

    def __call__(self, value: float) -> float:
        return round(self.out_lo + (value - self.lo) / (self.hi - self.lo) * (self.out_hi - self.out_lo), 1)


def padded(values: list[float], floor_zero: bool = False) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    pad = (hi - lo) * 0.06 or abs(hi) * 0.05 or 1.0
    return (0.0 if floor_zero else lo - pad), hi + pad
