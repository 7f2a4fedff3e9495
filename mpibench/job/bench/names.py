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
}


def label(name: str) -> str:
    """A baseline's label, else the strategy's own ``bench_label`` (``in-step sync: NAME``
    when it has none)."""
    from mpibench.sync.registry import BUILTIN

    own = getattr(BUILTIN.get(name), "bench_label", "")
    return LABELS.get(name) or own or f"in-step sync: {name}"
