"""The ``batch`` job: many sweep cases one after another in one launch.

Under ``mpirun -n N python -m mpibench batch PLAN.json``. The plan lists cases,
each as the argument list of its own ``run`` command (so a case runs with
exactly the configuration its replay command gives it). The cases run through
the main job's loop (:func:`mpibench.job.caseloop.run_plan`): the world size is
restored between cases by spawning replacements, and each case writes its
own output folder as ``run`` would, then ``case-status.json`` with the exit
status ``run`` would have had. The driver reads those to find where a batch
that died stopped (:mod:`mpibench.drive.batching`).

Exit status 0 when every case ran to its end (whatever the cases found), 2 for a
plan that cannot be read.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from mpi4py import MPI

from mpibench.base.config import RunConfig, UsageError
from .continuation import Batch
from mpibench.base.records import RunRecords


@dataclass(frozen=True)
class PlannedCase:
    case_id: str
    args: tuple[str, ...]  # the case's ``run`` arguments, --out included


def read_plan(path: str) -> list[PlannedCase]:
    """The cases of a plan file; UsageError when it cannot be read."""
    try:
        plan = json.loads(Path(path).read_text())
        cases = [PlannedCase(str(c["case"]), tuple(str(a) for a in c["args"])) for c in plan["cases"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"cannot read the batch plan {path}: {exc}") from None
    if not cases:
        raise UsageError(f"the batch plan {path} lists no cases")
    return cases


def batch_job(configs: list[RunConfig], outs: list[str]) -> int:
    """Run every case (config, output folder) in this launch; returns the exit status."""
    from .runner import recoverable_dup
    from .runfolder import backend_for

    world = MPI.COMM_WORLD
    job = Batch(tuple(configs), world.Get_size(), tuple(outs), configs[0], time.time())
    return batch_loop(job, recoverable_dup(world), 0, RunRecords(None), backend_for(configs[0]))


def batch_loop(job: Batch, comm: MPI.Comm, first: int, records, backend, done=(), until=None) -> int:
    """Cases ``first``.. of the batch; replacements spawned on the way enter here too."""
    from .caseloop import run_plan
    from .runner import free_comm

    results, comm, _ = run_plan(job, comm, first, records, backend, done, until)
    if comm.Get_rank() == 0:
        found = sum(1 for _, s, _ in results if s.violations or s.error)
        print(f"batch: {len(job.plan)} cases, {found} with a violation or stuck; "
              f"wall time {time.time() - job.start_time:.1f} s on {job.world_size} ranks", flush=True)
    code = comm.bcast(0, root=0)
    free_comm(comm)
    return code
