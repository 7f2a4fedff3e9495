"""The environment variables that choose numeric kernels, carried by every printed command.

The BLAS core type, thread counts and NumPy's CPU features decide the last bits of every loss
and update: a replay pasted into a clean shell without them gave other bits than the recorded
rows (``OPENBLAS_CORETYPE=Haswell`` is set on some machines). A printed command therefore
starts with ``env NAME=VALUE ...`` for each of them that is set.
"""
from __future__ import annotations

import os
import shutil

NUMERIC_ENV_PREFIXES = ("OPENBLAS_", "GOTO", "MKL_", "BLIS_", "OMP_", "NPY_", "VECLIB_")


def numeric_env() -> list[str]:
    """``NAME=VALUE`` of this environment's variables that change computed values."""
    return sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(NUMERIC_ENV_PREFIXES))


def env_prefix() -> list[str]:
    """``[env, NAME=VALUE, ...]`` to put before a command, or ``[]`` when none is set."""
    pinned = numeric_env()
    return [shutil.which("env") or "/usr/bin/env", *pinned] if pinned else []
