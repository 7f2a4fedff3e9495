"""What one rank can tell about the launch that started it, without asking MPI.

Some of a launch's abilities are settings of the launcher that never reach the
ranks' environment: Open MPI's ``--prtemca state_base_recoverable 1`` (a spawned
process may die without the launcher ending the job) and ``--oversubscribe``
(a spawn finds a slot even when every core has a rank) stay in ``prterun``.
So each rank reads the command line of the launcher process above it
(``/proc``), and the environment variables that set the same parameters.
Every rank reads its own; :mod:`mpibench.job.capabilities` gathers them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from mpibench.base.launch_command import nearest_ancestor_argv

# Process names of launchers and their per-host daemons whose command lines carry the flags.
LAUNCHER_NAMES = ("prterun", "mpirun", "mpiexec", "orterun", "prted", "prte", "mpiexec.hydra",
                  "hydra_pmi_proxy", "srun", "slurmstepd")
ANCESTORS_READ = 8  # how far up the process tree to look
TRUE_WORDS = ("1", "true", "yes", "t", "y", "on")


@dataclass(frozen=True)
class LauncherSeen:
    """One rank's reading of its launcher."""

    command: tuple[str, ...]  # the nearest launcher's argv, () when none was found
    recoverable: bool  # state_base_recoverable set true on the launcher or in the environment
    oversubscribe: bool  # the mapping allows more ranks than slots (spawns find a slot)
    fault_tolerance_env: bool  # OMPI_MCA_mpi_ft_enable true (Open MPI's mpirun --with-ft ulfm)


def launcher_command(pid: int | None = None) -> tuple[str, ...]:
    """The argv of the nearest ancestor that is a launcher or its daemon, or ()."""
    return nearest_ancestor_argv(LAUNCHER_NAMES, pid, ANCESTORS_READ)


def _true(text: str) -> bool:
    return text.strip().lower() in TRUE_WORDS


def param_value(argv: tuple[str, ...], name: str) -> str | None:
    """The value given to MCA parameter ``name`` on a command line (``--prtemca NAME V``,
    ``--mca NAME V``, ``--pmixmca NAME V``), or None."""
    for i, word in enumerate(argv[:-2]):
        if word.lstrip("-") in ("prtemca", "mca", "omca", "gmca") and argv[i + 1] == name:
            return argv[i + 2]
    return None


def oversubscribing(argv: tuple[str, ...], env) -> bool:
    """Whether the launch maps more ranks than slots when asked (a spawn then finds a slot)."""
    words = [w.lower() for w in argv]
    if "--oversubscribe" in words or "-oversubscribe" in words:
        return True
    for i, word in enumerate(words[:-1]):
        if word.lstrip("-") == "map-by" and "oversubscribe" in words[i + 1]:
            return True
    policy = env.get("PRTE_MCA_rmaps_default_mapping_policy", "") + env.get("OMPI_MCA_rmaps_base_mapping_policy", "")
    return "oversubscribe" in policy.lower() or _true(env.get("OMPI_MCA_rmaps_base_oversubscribe", ""))


def read_launcher(env=None) -> LauncherSeen:
    """This rank's reading of its launcher and environment."""
    env = os.environ if env is None else env
    argv = launcher_command()
    given = param_value(argv, "state_base_recoverable")
    recoverable = _true(given) if given is not None else _true(env.get("PRTE_MCA_state_base_recoverable", ""))
    return LauncherSeen(argv, recoverable, oversubscribing(argv, env),
                        _true(env.get("OMPI_MCA_mpi_ft_enable", "")))
