"""What this launch can do, probed on every rank before the first case, and what each
planned case needs of it.

A case that kills a rank needs process-fault tolerance (survivors are told and
recover). A case after which the world is restored by spawning replacements (every
kill case of a job of many cases, and ``--recovery respawn``) needs spawning that
works and a launcher that survives the death of a spawned process: without the
latter Open MPI's launcher ends the whole job (exit 137) when a later case kills a
replacement. The probe reads every rank (fault tolerance, the launcher's own
settings, the slots the launcher offers, the CPUs each host's ranks may use) and
says which cases cannot run here and the complete launcher flags that would run
them. Cases are left out instead of failing, and
the job's exit status says so (:data:`mpibench.base.exits.EXIT_PARTIAL`).
"""
from __future__ import annotations

import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from mpi4py import MPI

from mpibench.base.launch_command import Launch, command, this_launch
from mpibench.base.launchflags import (FAULT_TOLERANCE_FLAGS, OPEN_MPI_FLAGS, RECOVERABLE_SPAWN_FLAGS,
                                       root_env_words)

from .hostload import HostCores, host_cores
from .launcher_seen import read_launcher

WORKS = "available"
NO_SLOT = "no free slot"
SIMULATED = "simulated"  # mpibench.sim: all p ranks in one process on a virtual clock


@dataclass(frozen=True)
class Capabilities:
    """The launch as every rank saw it (the same value on every rank)."""

    family: str  # "Open MPI", "MPICH" (and its derivatives) or "other"
    library: str  # the MPI's own version line
    ranks: int
    fault_tolerance: bool  # every rank can survive another's death (ULFM active)
    fault_tolerance_how: str
    recoverable_spawn: bool  # a spawned process may die without the launcher ending the job
    oversubscribe: bool  # the launcher maps more ranks than slots
    universe_size: int | None  # MPI_UNIVERSE_SIZE: the slots the launcher offers, if it says
    spawn: str  # WORKS, or why spawning is not available / was not looked at
    revoke: bool  # Comm.Revoke is there (ULFM's, or the MPI's own extension)
    hosts: tuple[HostCores, ...]
    launcher: tuple[str, ...]  # the launcher's argv as rank 0 saw it

    @property
    def free_slots(self) -> int | None:
        return None if self.universe_size is None else max(0, self.universe_size - self.ranks)

    def lacking(self, kills: bool, respawns: bool, interrupts: bool = False) -> str:
        """What a case needs that this launch lacks, in words a user can act on ('' if none).
        ``kills``: its schedule kills ranks; ``respawns``: replacements are spawned for it
        (during it, or afterwards to restore the world size); ``interrupts``: a step can
        fail on some ranks (cut, dropped straggler), which the others learn by a revoke."""
        if kills and not self.fault_tolerance:
            return self.fault_tolerance_needs()
        if interrupts and not self.revoke:
            return (f"MPI_Comm_revoke, which this MPI ({self.family}) does not offer here "
                    "(a failed step is ended on every rank by revoking its communicator)")
        if interrupts and not self.fault_tolerance and self.family == "Open MPI":
            # seen here without it: cut scenarios hung, and a revoke made the launcher fail the job
            return shlex.join(FAULT_TOLERANCE_FLAGS)
        if respawns and kills and not self.recoverable_spawn:
            if self.family == "Open MPI":
                return f"{shlex.join(RECOVERABLE_SPAWN_FLAGS)} (a killed replacement would end the launch)"
            return "a launcher that survives the death of a spawned process"
        if respawns and kills and self.spawn != WORKS:
            if self.family == "Open MPI" and self.spawn.startswith(NO_SLOT):
                return "--oversubscribe (or more slots than ranks): each replacement needs a free slot"
            return f"spawning replacements, which this launch does not offer ({self.spawn})"
        return ""

    def fault_tolerance_needs(self) -> str:
        if self.family == "Open MPI":
            return shlex.join(FAULT_TOLERANCE_FLAGS)
        return f"process-fault tolerance, which this MPI ({self.family}) does not offer here"

    def as_dict(self) -> dict:
        info = asdict(self)
        info.update(hosts=[h.as_dict() for h in self.hosts], free_slots=self.free_slots,
                    launcher=shlex.join(self.launcher))
        return info


def mpi_family(library: str) -> str:
    if library.startswith("mpibench simulated MPI"):
        return SIMULATED
    if "Open MPI" in library:
        return "Open MPI"
    if any(word in library for word in ("MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH")):
        return "MPICH"
    return "other"


def _ulfm_active() -> tuple[bool, str]:
    from mpibench.base import runinfo

    status = runinfo.ulfm_status()
    return bool(status["active"]), status["probe"]


def probe(world: MPI.Comm, spawn_needed: bool) -> Capabilities:
    """Probe the launch (collective over ``world``). ``spawn_needed``: some planned case
    would spawn replacements, so whether they would find a slot matters."""
    seen = world.allgather((read_launcher(), _ulfm_active()))
    library = MPI.Get_library_version().replace("\x00", "").strip().splitlines()[0]
    family = mpi_family(library)
    fault_tolerance = all(active for _, (active, _) in seen)
    universe = world.Get_attr(MPI.UNIVERSE_SIZE)
    # the simulated engine offers what Open MPI offers under its full flags (mpibench.sim)
    recoverable = family == SIMULATED or (family == "Open MPI" and any(s.recoverable for s, _ in seen))
    oversubscribe = any(s.oversubscribe for s, _ in seen) or (family == SIMULATED and universe is None)
    hosts = tuple(host_cores(world))
    caps = Capabilities(family, library, world.Get_size(), fault_tolerance, seen[0][1][1], recoverable,
                        oversubscribe, universe, "", _revoke_works(world, family), hosts, seen[0][0].command)
    from dataclasses import replace

    return replace(caps, spawn=_spawn_probe(world, caps, spawn_needed))


def _revoke_works(world: MPI.Comm, family: str) -> bool:
    """Whether ``Comm.Revoke`` works here (collective). Open MPI 5 has it with or without
    ``--with-ft ulfm`` (checked); elsewhere it is tried on a private copy of ``world``."""
    if family == "Open MPI":
        return hasattr(MPI.Comm, "Revoke")
    trial = world.Dup()
    try:
        trial.Revoke()
        works = True
    except (NotImplementedError, MPI.Exception):  # mpi4py raises the former when the MPI lacks it
        works = False
    # The revoked copy is kept, not freed: the revoke's notices travel on its context id,
    # and a notice that arrived after a Free could land on a later communicator given the
    # same id.
    _REVOKED_TRIALS.append(trial)
    return bool(world.allreduce(int(works), op=MPI.MIN))


_REVOKED_TRIALS: list = []


def _spawn_probe(world: MPI.Comm, caps: Capabilities, needed: bool) -> str:
    """WORKS where a replacement will find a slot (the launcher oversubscribes, or offers
    more slots than ranks), else why not, or why it was not looked at.

    Nothing is spawned to find out: a spawn the launcher refuses makes Open MPI's
    launcher exit non-zero at the end of an otherwise good job, and a trial spawn
    that succeeded across two nodes broke the job's later respawn there (PMIx error
    in pmix_server_dyn.c, the replacement unreachable)."""
    if not needed:
        return "not looked at: no planned case spawns"
    if not (caps.fault_tolerance and caps.recoverable_spawn):
        return "not looked at: replacements could not be recovered here"
    free = caps.free_slots
    if not caps.oversubscribe and (free is None or free < 1):
        return f"{NO_SLOT}: {caps.ranks} rank(s) fill the {caps.universe_size} slot(s)"
    return WORKS


def full_command(caps: Capabilities, args: list[str]) -> str:
    """The command that runs every case, as it can be pasted (same ranks and arguments).

    Only Open MPI 5 with ULFM has been seen to run them all; under another MPI this
    names that launch (``make run``) rather than flags that library does not have."""
    if caps.family != "Open MPI":
        return "an Open MPI 5 launch with ULFM: make run (MPI=embedded, the default)"
    program = this_launch().launcher[0]  # the launcher this job was started with, by its full path
    if Path(program).name not in ("mpirun", "mpiexec", "prterun"):  # srun: Open MPI's own launcher instead
        beside = Path(sys.executable).parent / "mpirun"
        program = str(beside) if beside.exists() else "mpirun"
    every_case = Launch((program, *OPEN_MPI_FLAGS), sys.executable)
    return shlex.join([*root_env_words(), *command(every_case, caps.ranks, _without_out(args))])


def _without_out(args: list[str]) -> list[str]:
    """``args`` less ``--out DIR`` and ``--force``: the command writes a fresh folder."""
    kept, skip = [], False
    for word in args:
        if skip:
            skip = False
        elif word == "--out":
            skip = True
        elif not word.startswith("--out=") and word != "--force":
            kept.append(word)
    return kept


def describe(caps: Capabilities) -> list[str]:
    """The launch in a few lines: MPI, ranks and hosts with their CPUs, what it can do."""
    hosts = "; ".join(f"{h.host}: {h.ranks} rank(s) on {h.cores} CPU(s), binding {h.binding}"
                      + (" (oversubscribed)" if h.oversubscribed else "") for h in caps.hosts)
    slots = "unknown" if caps.universe_size is None else str(caps.free_slots)
    return [f"launch: {' '.join(caps.library.split(',')[0].split())} ({caps.family}), {caps.ranks} rank(s) on "
            f"{len(caps.hosts)} host(s): {hosts}",
            f"  process-fault tolerance: {'yes' if caps.fault_tolerance else 'no'} (probe: {caps.fault_tolerance_how})",
            f"  spawn: {caps.spawn}; free slots: {slots}{', oversubscribing' if caps.oversubscribe else ''}; "
            f"recoverable spawned processes: {'yes' if caps.recoverable_spawn else 'no'}"]


def cases_not_run(caps: Capabilities, configs, schedules, restores_world: bool) -> dict[int, str]:
    """Index -> what the case needs, for each case this launch cannot run. ``restores_world``:
    the job spawns replacements after a kill case to restore its world size."""
    found = {}
    from .runner import scenario_config

    for index, (config, schedule) in enumerate(zip(configs, schedules)):
        kills = schedule.needs_ulfm()
        dropped = bool(schedule.delays) and scenario_config(config, schedule).straggler_deadline > 0
        needs = caps.lacking(kills, restores_world or config.recovery == "respawn",
                             interrupts=bool(schedule.partitions) or dropped)
        if needs:
            found[index] = needs
    return found


def plan_block(caps: Capabilities, names: list[str], not_run: dict[int, str], args: list[str]) -> str:
    """One block for the console: what runs, what does not and what each needs, and the
    complete command that would run everything (spelled out once)."""
    lines = describe(caps)
    ran = len(names) - len(not_run)
    if not not_run:
        return "\n".join(lines + [f"runs all {len(names)} planned case(s)"])
    lines.append(f"runs {ran} of {len(names)} planned case(s); not run ({len(not_run)}):")
    by_need: dict[str, list[str]] = {}
    for index, needs in not_run.items():
        by_need.setdefault(needs, []).append(names[index])
    for needs, cases in by_need.items():
        lines.append(f"  needs {needs}: {', '.join(cases)}")
    lines.append(f"to run every case: {full_command(caps, args)}")
    return "\n".join(lines)
