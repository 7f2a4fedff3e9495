"""What a job does next: the continuations a spawned replacement carries.

A replacement process starts from nothing but the job's own entry point
(``python -m mpibench _replacement``) and what the survivors hand it. The
fault layer carries the continuation without reading it; the job layer
(:mod:`mpibench.job.suite`) reads it to know where the replacement enters:

* :class:`SingleRun` -- the job is one ``run``: finish it and report.
* :class:`MainJobAt` -- a job of many items (the :class:`MainJob`, or a
  :class:`Batch` of sweep cases), inside its item ``index``: after that item,
  go on with ``index + 1``.
* :class:`BetweenScenarios` -- spawned to restore the world size before
  item ``index`` of such a job (not inside any item).

Both carry the outcomes of the items already run (whichever process ends up
first in the membership prints the closing table, and it may have joined
late) and the end of the job's time budget for budgeted items, as the
membership's first process saw it.

An item writes either into the job's folder (history case ``index``) or into
a folder of its own (``outs[index]``, history case 0), exactly as the item's
own ``run`` command would.

The fault layer's own continuation (resume a scenario at a step) is
:class:`mpibench.faults.respawn.Resume`, which holds one of these as ``after``.
"""
from __future__ import annotations

from dataclasses import dataclass

from mpibench.base.config import RunConfig


@dataclass(frozen=True)
class MainJob:
    """The main job's plan (its scenarios, then its own short sweep) and what it reports at the end."""

    plan: tuple[RunConfig, ...]
    world_size: int
    out: str
    base: RunConfig
    calibration: object  # results.job calibration, or None when benchmarks are left out
    start_time: float  # time.time() at the start, for the closing wall time
    outs: tuple = ()  # per item: its own folder, or None (the job's folder); empty: every item in ``out``
    budgeted_from: int | None = None  # items from here run only while the sweep budget lasts
    sweep_s: float = 0.0  # that budget, counted from the first budgeted item
    sweep: object = None  # what the job's plan_sweep returned (mpibench.drive.jobsweep.JobSweep), judged at the end
    skip: frozenset = frozenset()  # items this launch cannot run (mpibench.job.capabilities)
    not_run: int = 0  # how many of the named scenarios' cases were left out so (exit status 4)
    restore_at_end = True  # the benchmarks after the plan want the whole world

    def folder(self, index: int) -> tuple[str, int]:
        """(output folder, history case index) of item ``index``."""
        own = self.outs[index] if index < len(self.outs) else None
        return (own, 0) if own is not None else (self.out, index)


@dataclass(frozen=True)
class Batch:
    """Sweep cases one after another in one launch, each in its own folder (``batch`` command)."""

    plan: tuple[RunConfig, ...]
    world_size: int
    outs: tuple[str, ...]
    base: RunConfig
    start_time: float
    out = None  # no folder of the job's own
    budgeted_from = None
    sweep_s = 0.0
    restore_at_end = False  # nothing runs after the last case

    def folder(self, index: int) -> tuple[str, int]:
        return self.outs[min(index, len(self.outs) - 1)], 0


@dataclass(frozen=True)
class SingleRun:
    out: str  # the job's output folder
    index: int = 0  # the run's one case

    @property
    def case_index(self) -> int:
        return self.index


@dataclass(frozen=True)
class _PlanPosition:
    """A place in a job's plan: the item, what ran before it, and the sweep's deadline."""

    job: MainJob | Batch
    index: int
    done: tuple = ()  # (config, summary, own folder or None) of the items before it
    until: float | None = None  # time.time() when budgeted items stop (None: not started yet)

    @property
    def out(self) -> str:
        return self.job.folder(self.index)[0]

    @property
    def case_index(self) -> int:
        return self.job.folder(self.index)[1]


@dataclass(frozen=True)
class MainJobAt(_PlanPosition):
    """Inside item ``index`` of the plan (a replacement spawned there finishes it, then goes on)."""


@dataclass(frozen=True)
class BetweenScenarios(_PlanPosition):
    """Before item ``index`` of the plan (a replacement spawned to restore the world size)."""


Continuation = SingleRun | MainJobAt | BetweenScenarios
