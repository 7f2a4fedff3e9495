"""The thread support MPI is started with, chosen before it starts and said beside a figure.

mpi4py starts MPI with ``MPI_THREAD_MULTIPLE`` unless told otherwise, so Python training code
(and ``bench``'s ``blocking`` and ``c_floor`` rows, which run in the same processes) get it;
C benchmarks such as IMB-MPI1 and OSU start with ``MPI_Init``, thread support single. Open MPI
pays for thread safety in every call under multiple: on the development VM a C loop of 4 KiB
``MPI_Allreduce`` at p = 2, a barrier before each call, took 2.59-2.66 us started single
and 3.02-3.08 us started multiple in the launches that landed in the host's fastest state
(six of ten each, alternating). The choice must be made before ``mpi4py.MPI`` is imported;
nothing here imports it at load.
"""
from __future__ import annotations

import sys

LEVELS = ("multiple", "single")
DEFAULT_LEVEL = "multiple"  # mpi4py's own default: what Python code gets
_NAMES = ("THREAD_SINGLE", "THREAD_FUNNELED", "THREAD_SERIALIZED", "THREAD_MULTIPLE")


class AlreadyStarted(RuntimeError):
    """MPI was started before the thread support could be chosen."""


def ask_for(level: str) -> None:
    """Have mpi4py start MPI with ``level`` (one of ``LEVELS``); call before ``mpi4py.MPI`` is
    imported. Raises :class:`AlreadyStarted` when it already was with another level."""
    if level not in LEVELS:
        raise ValueError(f"thread level must be one of {', '.join(LEVELS)}, got {level!r}")
    if "mpi4py.MPI" in sys.modules:
        provided = provided_level()
        if provided != level:
            raise AlreadyStarted(f"MPI was started with thread support {provided} before {level} could be asked for")
        return
    import mpi4py

    mpi4py.rc.thread_level = level


def provided_level() -> str:
    """The thread support MPI was started with, as a word of ``LEVELS`` or ``funneled``/``serialized``."""
    from mpi4py import MPI

    provided = MPI.Query_thread()
    for name in _NAMES:
        if getattr(MPI, name) == provided:
            return name.removeprefix("THREAD_").lower()
    return str(provided)


def describe(asked: str) -> str:
    """One line: what was asked for and what MPI provided (e.g. ``multiple (provided multiple)``)."""
    return f"{asked} (provided {provided_level()})"
