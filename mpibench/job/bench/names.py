"""The names of the benchmark's rows and the label each row carries in ``bench.csv``.

Kept apart from :mod:`.candidates` (which starts MPI) so that options can be checked, and bad
input refused, before MPI starts.
"""
from __future__ import annotations

BLOCKING, C_FLOOR = "blocking", "c_floor"
BASELINES = (BLOCKING, C_FLOOR)
LABELS = {
    BLOCKING: "blocking MPI_Allreduce from mpi4py (no wrapper, no deadline)",
    C_FLOOR: "C loop of MPI_Allreduce (no Python)",
    "native": "in-step sync: Iallreduce polled against the deadline, plus a copy",
    "ring": "in-step sync: ring all-reduce (reduce-scatter + all-gather)",
    "ps": "in-step sync: parameter server",
}


def label(name: str) -> str:
    return LABELS.get(name, f"in-step sync: {name}")
