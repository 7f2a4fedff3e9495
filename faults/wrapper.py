"""The communicator wrapper that carries out a schedule."""
from __future__ import annotations


def wrap(comm, schedule, fault_log):
    """The communicator the strategies should use under ``schedule``."""
    if not schedule.events:
        return comm
    raise NotImplementedError("fault injection is not available yet")
