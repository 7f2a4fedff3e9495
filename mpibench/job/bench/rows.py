"""``bench.csv`` rows, progress lines and the summary line (see docs/outputs.md, "The files").

Bandwidth as nccl-tests reports it, in GB/s (10^9 bytes per second):
``algbw = bytes / time_max_s`` and ``busbw = algbw * 2(p-1)/p``. On one rank
nothing travels: the row keeps its time but has no bandwidth, and says so.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mpibench.base.records import BENCH_COLUMNS
from mpibench.base.units import human_bytes
from mpibench.sync.ring import busbw_factor

from .names import label

if TYPE_CHECKING:
    from .rounds import Spread

NO_COMMUNICATION = "p=1: no communication; the time is call overhead, not bandwidth"


def bandwidths(ranks: int, n_bytes: int, time_s: float) -> tuple[float | None, float | None]:
    """(algbw, busbw) in GB/s; (None, None) on one rank or without a time."""
    if ranks <= 1 or time_s <= 0:
        return None, None
    algbw = n_bytes / time_s / 1e9
    return algbw, algbw * busbw_factor(ranks)


def bench_row(name: str, ranks: int, n_bytes: int, iterations: int, stats: dict, **extra) -> dict:
    """A measured row from ``stats`` (``time_min_s``, ``time_avg_s``, ``time_max_s``, ``errors``)."""
    algbw, busbw = bandwidths(ranks, n_bytes, stats["time_max_s"])
    row = {c: None for c in BENCH_COLUMNS}
    row.update({"strategy": name, "label": label(name), "ranks": ranks, "bytes": n_bytes,
                "iterations": iterations, **stats, "algbw_gbps": algbw, "busbw_gbps": busbw,
                "op": "sum", "tag": "measured", "note": NO_COMMUNICATION if ranks <= 1 else ""})
    row.update(extra)
    return row


def measured_row(name: str, ranks: int, n_bytes: int, dtype: str, in_place: bool, warmup: int,
                 iterations: int, rounds: int, s: Spread, vs_blocking: float | None) -> dict:
    itemsize = 8 if dtype == "float64" else 4
    stats = {"time_min_s": s.time_min_s, "time_avg_s": s.time_avg_s, "time_max_s": s.time_max_s,
             "errors": s.errors}
    return bench_row(name, ranks, n_bytes, iterations, stats, count=n_bytes // itemsize, dtype=dtype,
                     in_place=in_place, warmup=warmup, rounds=rounds, round_p90_s=s.round_p90_s,
                     round_cv_pct=s.round_cv_pct, vs_blocking=vs_blocking)


def modelled_row(measured: dict, time_s: float) -> dict:
    """The model's twin of a measured row, with measured / modelled time."""
    algbw, busbw = bandwidths(measured["ranks"], measured["bytes"], time_s)
    row = {c: None for c in BENCH_COLUMNS}
    keep = ("strategy", "label", "ranks", "bytes", "count", "dtype", "op", "in_place", "note")
    row.update({k: measured.get(k) for k in keep})
    row.update({"time_min_s": time_s, "time_avg_s": time_s, "time_max_s": time_s, "algbw_gbps": algbw,
                "busbw_gbps": busbw, "tag": "modelled",
                "model_ratio": measured["time_max_s"] / time_s if time_s > 0 else None})
    return row


def _gbps(value) -> str:
    return "      -" if value is None else f"{value:8.3f}"


def header_line() -> str:
    return ("bench  strategy       p       size      count  dtype    place   time min/avg/max (us)"
            "              p90 (us)  cv%   algbw   busbw (GB/s)  x blocking  #wrong")


def progress_line(row: dict) -> str:
    place = "" if row.get("in_place") is None else ("in" if row["in_place"] else "out")
    ratio = row.get("vs_blocking")
    return (f"bench  {row['strategy']:<12} {row['ranks']:>3} {human_bytes(row['bytes']):>10} "
            f"{row.get('count') or '':>10}  {row.get('dtype') or '':<8} {place:<4}"
            f"{row['time_min_s'] * 1e6:10.1f} {row['time_avg_s'] * 1e6:10.1f} {row['time_max_s'] * 1e6:10.1f}"
            f" {(row.get('round_p90_s') or 0) * 1e6:10.1f} {row.get('round_cv_pct') or 0:5.1f}"
            f" {_gbps(row['algbw_gbps'])} {_gbps(row['busbw_gbps'])}"
            f"  {'' if ratio is None else f'{ratio:9.2f}x':>10}  {'-' if row['errors'] is None else row['errors']}"
            + (f"   ({row['note']})" if row.get("note") else ""))


ONE_LAUNCH_NOTE = ("# one launch: these times and ratios are this launch's alone, and launches of one job can "
                   "land in states several-fold apart; bench's option --launches N (run without mpirun, "
                   "with --np for the ranks) repeats the job and gives medians with 95 % intervals over "
                   "launches and a verdict per ratio")


def summary_lines(rows: list[dict]) -> list[str]:
    """nccl-tests' closing line, per candidate: average bus bandwidth over the sizes."""
    measured = [r for r in rows if r["tag"] == "measured"]
    if not measured:
        return []
    if all(r["ranks"] <= 1 for r in measured):
        return ["# Avg bus bandwidth: none at p=1 (no communication); times only"]
    names = list(dict.fromkeys(r["strategy"] for r in measured))
    parts = []
    for name in names:
        bw = [r["busbw_gbps"] for r in measured if r["strategy"] == name and r["busbw_gbps"] is not None]
        if bw:
            parts.append(f"{name} {sum(bw) / len(bw):.3f}")
    wrong = sum(r["errors"] or 0 for r in measured)
    return [f"# Avg bus bandwidth (GB/s = 1e9 B/s, mean over {len(set(r['bytes'] for r in measured))} "
            f"sizes): {', '.join(parts)}", f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}"]
