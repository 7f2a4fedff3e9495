"""Sync strategies, one module each, all behind :class:`SyncStrategy`.

A new strategy is one file defining a subclass and one line in ``STRATEGIES``.
"""
from __future__ import annotations

from .base import Reduction, SyncStrategy
from .native import NativeAllreduce
from .ps import ParameterServer
from .ring import RingAllreduce

STRATEGIES: dict[str, type[SyncStrategy]] = {
    NativeAllreduce.name: NativeAllreduce,
    RingAllreduce.name: RingAllreduce,
    ParameterServer.name: ParameterServer,
}


def make_strategy(name: str, comm, backend, n_params: int, options: dict | None = None) -> SyncStrategy:
    try:
        cls = STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r} (choose from {', '.join(STRATEGIES)})") from None
    return cls(comm, backend, n_params, options)


__all__ = ["Reduction", "SyncStrategy", "STRATEGIES", "make_strategy"]
