"""Per-step tallies of what crossed between host and device, and what MPI was handed.

``h2d``/``d2h`` (and ``*_bytes``) count every explicit copy the device runtime
made: the back-end's own (the packed step buffer, the parameter mirror, the
count read for the records, the parameter server's slices) and the staged
transfer policy's copies for MPI. ``mpi_out``/``mpi_in`` (and ``*_bytes``)
count device buffers handed to MPI to read or to write, whichever path.
``syncs`` counts explicit stream synchronisations.

What each policy promises for the MPI part of a step: ``staged`` copies every
device byte MPI reads to the host once and every byte MPI writes to the device
once, so the staging adds exactly ``mpi_out_bytes`` to ``d2h_bytes`` and
``mpi_in_bytes`` to ``h2d_bytes``; ``cuda-aware`` adds no copy at all.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

COLUMNS = ("h2d", "h2d_bytes", "d2h", "d2h_bytes", "mpi_out", "mpi_out_bytes", "mpi_in", "mpi_in_bytes",
           "syncs")


@dataclass(frozen=True)
class TransferCounts:
    h2d: int = 0
    h2d_bytes: int = 0
    d2h: int = 0
    d2h_bytes: int = 0
    mpi_out: int = 0
    mpi_out_bytes: int = 0
    mpi_in: int = 0
    mpi_in_bytes: int = 0
    syncs: int = 0

    def __sub__(self, other: "TransferCounts") -> "TransferCounts":
        return TransferCounts(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    def as_row(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def transfer_counts(backend) -> TransferCounts | None:
    """The back-end's counters now; ``None`` for a host back-end (nothing can cross)."""
    counters = backend.counters() if hasattr(backend, "counters") else None
    if counters is None:
        return None
    return TransferCounts(
        h2d=counters.get("copy_h2d", 0), h2d_bytes=counters.get("copy_h2d_bytes", 0),
        d2h=counters.get("copy_d2h", 0), d2h_bytes=counters.get("copy_d2h_bytes", 0),
        mpi_out=counters.get("mpi_out", 0), mpi_out_bytes=counters.get("mpi_out_bytes", 0),
        mpi_in=counters.get("mpi_in", 0), mpi_in_bytes=counters.get("mpi_in_bytes", 0),
        syncs=counters.get("copy_sync", 0))
