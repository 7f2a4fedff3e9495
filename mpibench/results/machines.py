"""Which machine each side of ``compare`` measured on, and one line when they differ.

A ratio of two runs is a ratio of code only when both ran on the same machine
setup; pyperf refuses to compare otherwise. ``compare`` does not refuse (it is
also the before/after check for an MPI library change) but says so. The
machine is read from each run's ``run.json``: what ``runinfo.machine`` records
(the CPU model, the writing host's CPU count, the MPI library, the OS, Python),
the number of hosts, and the GPU's name where a main job recorded one.

Left out on purpose, because they differ between launches of one machine setup:
host names (a scheduler hands each job other nodes of the same kind), the CPUs
in the ranks' affinity masks and the binding (options of the launch, not the
machine), the host load and ``fingerprint.csv``'s figures (the launch's state,
which ``bench --launches`` clusters), and package versions (mpibench's own
among them: the code under comparison).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields

from .launchcompare import launch_folders


@dataclass(frozen=True)
class Machine:
    """One run's machine as its run.json recorded it; None where it recorded nothing."""

    cpu_model: str | None = None
    cpus: int | None = None  # the writing host's os.cpu_count()
    mpi_library: str | None = None
    os: str | None = None  # platform.platform(): kernel, architecture, C library
    python: str | None = None
    hosts: int | None = None
    gpu: str | None = None


@dataclass(frozen=True)
class Difference:
    name: str
    a: object
    b: object


@dataclass(frozen=True)
class MachineCheck:
    """What the two sides' machines say: the fields that differ, or the sides with none recorded."""

    differences: tuple[Difference, ...]
    unknown: tuple[str, ...]  # "A", "B": sides whose run.json records no machine


def _run_json(folder: str) -> dict:
    try:
        with open(os.path.join(folder, "run.json")) as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _section(info: dict, name: str) -> dict:
    value = info.get(name)
    return value if isinstance(value, dict) else {}


def machine_of_folder(folder: str) -> Machine | None:
    """The machine a run folder's run.json records; None when it records none of the identity
    fields (a run from before they were recorded, a bench.csv without its folder)."""
    info = _run_json(folder)
    hosts = info.get("host_count", len(info["host_cpus"]) if isinstance(info.get("host_cpus"), list) else None)
    found = Machine(info.get("cpu_model"), info.get("cores_on_this_host"), _section(info, "mpi").get("library"),
                    info.get("platform"), info.get("python"), hosts, _section(info, "device").get("device_name"))
    # The host count alone identifies no machine: every bench run.json has had it.
    identity = [getattr(found, f.name) for f in fields(Machine) if f.name != "hosts"]
    return found if any(value is not None for value in identity) else None


def machine_of(path: str) -> Machine | None:
    """The machine of one side of ``compare``: a run folder, a bench.csv (its folder), or a
    ``bench --launches`` folder (its first launch that recorded one, as ``conditions`` reads)."""
    folders = launch_folders(path) or [path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))]
    for folder in folders:
        found = machine_of_folder(folder)
        if found is not None:
            return found
    return None


def check_machines(a: Machine | None, b: Machine | None) -> MachineCheck:
    """The fields both sides recorded and differ in; a field only one side recorded is not a
    difference (a run from before it was recorded says nothing about it)."""
    unknown = tuple(side for side, m in (("A", a), ("B", b)) if m is None)
    if unknown:
        return MachineCheck((), unknown)
    differ = tuple(Difference(f.name, getattr(a, f.name), getattr(b, f.name)) for f in fields(Machine)
                   if None not in (getattr(a, f.name), getattr(b, f.name))
                   and getattr(a, f.name) != getattr(b, f.name))
    return MachineCheck(differ, ())


def machine_line(check: MachineCheck) -> str:
    """One line for the printout and the table; "" when both sides ran on the same machine."""
    if check.unknown:
        sides = " and ".join(check.unknown)
        return f"machine{'s' if len(check.unknown) > 1 else ''} of {sides} unknown (no fingerprint)"
    if not check.differences:
        return ""
    said = "; ".join(f"{d.name} {d.a!r} vs {d.b!r}" for d in check.differences)
    return f"different machines: {said} — ratios compare the machines as well as the code"


def machines_line(path_a: str, path_b: str) -> str:
    """:func:`machine_line` for two sides of ``compare`` given as paths."""
    return machine_line(check_machines(machine_of(path_a), machine_of(path_b)))
