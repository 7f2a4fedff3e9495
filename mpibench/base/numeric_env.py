"""The environment variables that change computed values, carried by every printed command.

The BLAS core type, thread counts and NumPy's CPU features decide the last bits of every loss
and update: a replay pasted into a clean shell without them gave other bits than the recorded
rows (``OPENBLAS_CORETYPE=Haswell`` is set on some machines). The MPI library's own tuning
variables do the same through the reduction's order of additions: five ranks of ``run
--hidden 256`` under ``OMPI_MCA_coll_libnbc_iallreduce_algorithm=1`` (ring) wrote other
losses and parameters than the default, from the second step on, both runs passing. A
printed command therefore starts with ``env NAME=VALUE ...`` for each of them that is set
(the MPI ones as :mod:`.mpi_settings` reads them: the user's, not the launcher's own), and
``PYTHONPATH`` when set, where the plugins a command names are found.
"""
from __future__ import annotations

import os
import shutil

from .mpi_settings import mpi_settings

NUMERIC_ENV_PREFIXES = ("OPENBLAS_", "GOTO", "MKL_", "BLIS_", "OMP_", "NPY_", "VECLIB_")


def numeric_env(with_mpi: bool = True) -> list[str]:
    """``NAME=VALUE`` of this environment's variables that change computed values: the
    numeric kernels' and, with ``with_mpi``, the MPI library's tuning variables."""
    kernels = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(NUMERIC_ENV_PREFIXES))
    return kernels + (mpi_settings() if with_mpi else [])


def plugin_path() -> list[str]:
    """``PYTHONPATH=...`` when it is set: a plugin strategy, fault kind or run-parts module
    named in the command is imported from there, so a pasted command needs it too."""
    path = os.environ.get("PYTHONPATH")
    return [f"PYTHONPATH={path}"] if path else []


def env_prefix(with_mpi: bool = True) -> list[str]:
    """``[env, NAME=VALUE, ...]`` to put before a command, or ``[]`` when none is set
    (``with_mpi=False``: a command that runs no MPI, such as the simulated engine's)."""
    pinned = numeric_env(with_mpi) + plugin_path()
    return [shutil.which("env") or "/usr/bin/env", *pinned] if pinned else []
