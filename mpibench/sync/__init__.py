"""Sync strategies, one module each, all behind :class:`SyncStrategy`.

A new strategy is one file defining a subclass and one line in
:data:`registry.BUILTIN`; third-party strategies plug in through the
``mpibench.strategies`` entry-point group or ``package.module:Class`` (see
:mod:`.registry`).
"""
from __future__ import annotations

from .base import Reduction, SyncStrategy
from .registry import BUILTIN as STRATEGIES
from .registry import make as _make


def make_strategy(name: str, comm, backend, n_params: int, options: dict | None = None) -> SyncStrategy:
    """The strategy called ``name`` (built-in, plugin or ``module:Class``) on ``comm``."""
    return _make(name, comm, backend, n_params, options)


__all__ = ["Reduction", "SyncStrategy", "STRATEGIES", "make_strategy"]
