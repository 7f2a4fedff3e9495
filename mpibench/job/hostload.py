"""How crowded each host is: the CPUs its ranks may use, and how busy other work kept it.

On a shared machine, other processes' CPU time is the commonest reason a
measurement disagrees with the model; it is measured here, not guessed. More
ranks than CPUs on a host is judged from every rank's affinity mask on that
host together (:func:`host_cores`), never from one rank's.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from mpi4py import MPI

from mpibench.base.runinfo import this_host


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


@dataclass(frozen=True)
class HostCores:
    """The CPUs one host lends this job: the union of its ranks' affinity masks.

    One rank's mask says nothing about the host: under per-core binding each rank
    sees one CPU, under ``--bind-to none`` every rank sees them all. The union over
    the ranks on the host is what they share, whatever the launcher's binding."""

    host: str
    ranks: int
    cores: int  # CPUs in the union of the masks of this host's ranks
    cpus_per_rank: tuple[int, ...]  # each rank's own mask size, in rank order
    overlapping: bool  # some CPU is in more than one rank's mask

    @property
    def oversubscribed(self) -> bool:
        return self.ranks > self.cores

    @property
    def binding(self) -> str:
        """The binding seen, in words (run.json)."""
        if all(n >= self.cores for n in self.cpus_per_rank):
            return f"shared: each rank may use all {self.cores} CPU(s)"
        if not self.overlapping:
            return f"disjoint: {'/'.join(str(n) for n in sorted(set(self.cpus_per_rank)))} CPU(s) per rank"
        return "overlapping masks: some ranks share CPUs"

    def as_dict(self) -> dict:
        return {"host": self.host, "ranks": self.ranks, "cores": self.cores,
                "cpus_per_rank": list(self.cpus_per_rank), "binding": self.binding,
                "oversubscribed": self.oversubscribed}


def affinity() -> frozenset[int]:
    """The CPUs this process may run on."""
    try:
        return frozenset(os.sched_getaffinity(0))
    except AttributeError:  # not Linux: assume the whole machine
        return frozenset(range(os.cpu_count() or 1))


def _masks_by_host(world: MPI.Comm) -> dict[str, list[frozenset[int]]]:
    """Collective: every rank's affinity mask, grouped by host in the order hosts are first seen."""
    hosts: dict[str, list[frozenset[int]]] = {}
    for host, cpus in world.allgather((this_host(), sorted(affinity()))):
        hosts.setdefault(host, []).append(frozenset(cpus))
    return hosts


def host_cores(world: MPI.Comm) -> list[HostCores]:
    """Every host of the job with its ranks and the CPUs they may use (collective)."""
    hosts = _masks_by_host(world)
    found = []
    for host, masks in hosts.items():
        union = frozenset().union(*masks)
        found.append(HostCores(host, len(masks), len(union), tuple(len(m) for m in masks),
                               sum(len(m) for m in masks) > len(union)))
    return found


def cpus_of_first_host(world: MPI.Comm) -> frozenset[int] | None:
    """Collective: the CPUs the ranks on rank 0's host may use together (None where this
    platform cannot set a process's CPUs, so there is nothing to hand a nested launch)."""
    masks = next(iter(_masks_by_host(world).values()))
    return frozenset().union(*masks) if hasattr(os, "sched_setaffinity") else None


def busiest(hosts: list[HostCores]) -> HostCores:
    """The host with the most ranks beyond its cores (ties: the first seen)."""
    return max(hosts, key=lambda h: h.ranks - h.cores)


def oversubscription_note(hosts: list[HostCores]) -> str:
    """A note for every measured row when some host runs more ranks than it lends CPUs."""
    worst = busiest(hosts)
    if not worst.oversubscribed:
        return ""
    return (f"oversubscribed: {worst.ranks} ranks time-share {worst.cores} CPU(s) on {worst.host}; "
            "not a result")


def record_host_cpus(out_dir: str, hosts: list[HostCores]) -> None:
    """run.json's ``host_cpus`` (each host's ranks, CPUs and the binding seen) and the machine
    this rank runs on (``runinfo.machine``: CPU model, MPI library, OS, Python)."""
    from mpibench.base import runinfo

    runinfo.update(out_dir, {"host_cpus": [h.as_dict() for h in hosts], **runinfo.machine()})
