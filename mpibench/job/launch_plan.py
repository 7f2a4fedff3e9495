"""A job's plan against its launch: which planned cases run, which are left out and why.

Before the first case the job probes its launch (:mod:`mpibench.job.capabilities`);
each case the launch cannot run is left out, recorded as a phase "not run" with
what it needs (:func:`mpibench.base.plan.mark_not_run`, phase name = case id) and
named in one console block with the command that would run everything. The job's
exit status is then :data:`mpibench.base.exits.EXIT_PARTIAL` when what ran passed.
"""
from __future__ import annotations

import sys

from mpi4py import MPI

from mpibench.base.exits import EXIT_OK, EXIT_PARTIAL
from mpibench.base.plan import mark_not_run
from mpibench.engine.history import case_id

from .capabilities import Capabilities, cases_not_run, full_command, plan_block, probe
from .runner import prepare


def probe_plan(world: MPI.Comm, configs, restores_world: bool) -> tuple[Capabilities, dict[int, str]]:
    """Validate every planned case (bad input fails here, before any file is written),
    probe the launch, and name the cases it cannot run (index -> what each needs)."""
    schedules = [prepare(config, world.Get_size()) for config in configs]
    spawns = any(s.needs_ulfm() and (restores_world or c.recovery == "respawn")
                 for c, s in zip(configs, schedules))
    caps = probe(world, spawn_needed=spawns)
    return caps, cases_not_run(caps, configs, schedules, restores_world)


def case_ids(configs) -> list[str]:
    return [case_id(i, c.scenario, c.strategy, c.recovery) for i, c in enumerate(configs)]


def announce(world: MPI.Comm, out: str, caps: Capabilities, configs, not_run: dict[int, str]) -> None:
    """Rank 0 records each left-out case as a phase not run and prints the launch block."""
    if world.Get_rank() != 0:
        return
    ids = case_ids(configs)
    for index, needs in not_run.items():
        mark_not_run(out, ids[index], needs)
    names = [f"{c.scenario}/{c.strategy}" + (f"/{c.recovery}" if c.recovery != "shrink" else "")
             for c in configs]
    print(plan_block(caps, names, not_run, sys.argv[1:]), flush=True)


def run_json_fields(caps: Capabilities, configs, not_run: dict[int, str]) -> dict:
    """What run.json records of the launch: its capabilities and the cases left out."""
    ids = case_ids(configs)
    return {"launch": caps.as_dict(), "host_cpus": [h.as_dict() for h in caps.hosts],
            "not_run": {ids[i]: needs for i, needs in not_run.items()},
            "full_command": full_command(caps, sys.argv[1:]) if not_run else ""}


def sweep_left_out(world: MPI.Comm, caps: Capabilities, configs, first_index: int) -> frozenset:
    """Plan indices of the job's random sweep cases this launch cannot run; one line says so."""
    not_run = cases_not_run(caps, configs, [prepare(c, world.Get_size()) for c in configs], True)
    if not_run and world.Get_rank() == 0:
        needs = sorted(set(not_run.values()))
        print(f"sweep: {len(not_run)} of {len(configs)} random cases left out (they need "
              f"{'; '.join(needs)})", flush=True)
    return frozenset(first_index + i for i in not_run)


def partial_status(code: int | None, not_run: int) -> int | None:
    """The job's status once the left-out cases count: a pass becomes EXIT_PARTIAL."""
    if code in (EXIT_OK, EXIT_PARTIAL) and not_run:  # the checker already calls such a pass partial
        print(f"partial: everything that ran passed; {not_run} planned case(s) were not run "
              f"(named with what they need at the start); exit status {EXIT_PARTIAL}", flush=True)
        return EXIT_PARTIAL
    return code
