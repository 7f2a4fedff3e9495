"""The MPI library's tuning variables a figure was measured under, said beside it.

A variable such as ``OMPI_MCA_smsc=^cma`` changes what a benchmark measures without
changing its command: on the development VM, Open MPI's shared-memory transport without
its single-copy path ran a plain loop of 1 MiB ``Allreduce`` in 0.73 of the time (medians
of eight launches each), and moved whole launches between states far less
(docs/intervals.md). So a
benchmark says which of them were set, and a table over launches keeps them.

Inside a rank the launcher has added variables of its own with the same prefixes
(``OMPI_MCA_num_procs``, ``OMPI_MCA_orte_*`` ...); those are not the user's settings and
are left out (:func:`injected`).
"""
from __future__ import annotations

import os

PREFIXES = ("OMPI_MCA_", "PRTE_MCA_", "MPIR_CVAR_", "I_MPI_", "UCX_", "FI_")
# Open MPI's launcher puts these into every rank's environment.
INJECTED_MCA = frozenset({"num_procs", "initial_wdir", "cpu_type", "PREFIXES", "mpi_ft_enable"})
INJECTED_MCA_PREFIXES = ("orte_", "ess_", "pmix_")


def injected(key: str) -> bool:
    """Whether ``key`` is one a launcher sets in its ranks (not a setting of the user's)."""
    if not key.startswith("OMPI_MCA_"):
        return False
    name = key[len("OMPI_MCA_"):]
    return name in INJECTED_MCA or name.startswith(INJECTED_MCA_PREFIXES)


def mpi_settings(environ=None) -> list[str]:
    """``NAME=VALUE`` of the MPI tuning variables set in ``environ`` (this process's by default), sorted."""
    env = os.environ if environ is None else environ
    return sorted(f"{k}={v}" for k, v in env.items() if k.startswith(PREFIXES) and not injected(k))


def describe(settings: list[str]) -> str:
    """One line: the settings space-separated, or ``none set``."""
    return " ".join(settings) if settings else "none set"
