"""Collective tables at scale: every strategy's all-reduce time for ranks x sizes on a platform.

``mpibench predict --ranks 64,512,4096 --sizes 8,64K,64M --platform FILE``
plays each strategy's message rounds (:mod:`.rounds`) on the platform and
prints one row per (strategy, ranks, bytes): the time of one all-reduce, the
algorithm that runs (``auto`` and ``native`` resolve to one of theirs), the
bus bandwidth (nccl-tests' ``2 (p-1)/p`` bytes over time), and the notes
that qualify it (placement sending the largest messages through a NIC, a
topology predicted as full bisection). Every row is tagged ``simulated``: no
cluster ran it. The same rows can be written to a CSV.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from mpibench.base.config import UsageError
from mpibench.base.records import CsvLog

from . import rounds
from .platform import Platform

TABLE_STRATEGIES = tuple(s for s in rounds.STRATEGIES if s not in rounds.MODELLED_ONLY)  # the runnable ones


@dataclass(frozen=True)
class CollectiveRow:
    platform: str
    placement: str
    ranks_per_node: int
    strategy: str
    algorithm: str
    ranks: int
    bytes: int
    sync_s: float
    busbw_gbps: float
    notes: str
    tag: str = "simulated"
    reduction_s: float = 0.0  # the part of sync_s spent reducing locally


def collective_rows(plat: Platform, ranks, sizes, strategies=TABLE_STRATEGIES) -> list[CollectiveRow]:
    unknown = [s for s in strategies if s not in rounds.STRATEGIES]
    if unknown:
        raise UsageError(f"predict: no round model for {', '.join(unknown)} "
                         f"(one of {', '.join(rounds.STRATEGIES)})")
    out = []
    for strategy in strategies:
        for p in ranks:
            for nbytes in sizes:
                t = rounds.sync_s(plat, strategy, p, nbytes)
                busbw = 2 * (p - 1) / p * nbytes / t * 8 / 1e9 if t > 0 else 0.0
                out.append(CollectiveRow(plat.name, plat.placement, plat.ranks_per_node, strategy,
                                         rounds.resolve(plat, strategy, p, nbytes), p, nbytes, t, busbw,
                                         "; ".join(rounds.notes(plat, strategy, p, nbytes)),
                                         reduction_s=rounds.reduction_s(plat, strategy, p, nbytes)))
    return out


def format_rows(rows: list[CollectiveRow]) -> str:
    lines = [f"{'strategy':<13} {'runs':<13} {'ranks':>6} {'bytes':>10} {'time_us':>12} {'reduce_us':>10} "
             f"{'busbw_Gb/s':>11}  notes   [simulated]"]
    for r in rows:
        lines.append(f"{r.strategy:<13} {r.algorithm:<13} {r.ranks:>6} {r.bytes:>10} {r.sync_s * 1e6:>12.2f} "
                     f"{r.reduction_s * 1e6:>10.2f} {r.busbw_gbps:>11.2f}  {r.notes}")
    return "\n".join(lines)


def write_rows(path: Path, rows: list[CollectiveRow]) -> Path:
    names = list(CollectiveRow.__dataclass_fields__)
    log = CsvLog(str(path), names)
    for row in rows:
        log.write(asdict(row))
    log.close()
    return path


def parse_counts(text: str, what: str) -> list[int]:
    """``8,64K,1M`` as integers (K and M are 1024 and 1024 * 1024); bad input is a UsageError."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    out = []
    for part in (t.strip() for t in text.split(",")):
        try:
            value = int(part[:-1]) * units[part[-1].upper()] if part and part[-1].upper() in units else int(part)
        except ValueError:
            raise UsageError(f"{what}: {part!r} is not an integer (K, M, G suffixes allowed)") from None
        if value < 1:
            raise UsageError(f"{what}: {part!r} must be at least 1")
        out.append(value)
    return out
