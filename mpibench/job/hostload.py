"""How busy the host was with other work while something was being measured.

On a shared machine, other processes' CPU time is the commonest reason a
measurement disagrees with the model; it is measured here, not guessed.
"""
from __future__ import annotations

import os
import time

from mpi4py import MPI


def cpu_s() -> float:
    """CPU seconds this process has used."""
    t = os.times()
    return t.user + t.system


def host_busy_s() -> float | None:
    """CPU seconds all processes on this host have used (Linux /proc/stat), or None."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class HostLoad:
    """How many cores other processes kept busy while a measurement ran.

    The host's busy CPU time minus this job's own (summed over its ranks),
    divided by the wall time: a shared machine shows up here, not as noise.
    """

    def __init__(self, world: MPI.Comm):
        self.world = world
        self.cpu0, self.busy0, self.wall0 = cpu_s(), host_busy_s(), time.perf_counter()

    def other_cores(self) -> float | None:
        ours = self.world.allreduce(cpu_s() - self.cpu0)
        busy1, wall = host_busy_s(), time.perf_counter() - self.wall0
        if self.busy0 is None or busy1 is None or wall <= 0:
            return None
        return max(0.0, (busy1 - self.busy0) - ours) / wall
