"""What a job does next: the continuations a spawned replacement carries.

A replacement process starts from nothing but the job's own entry point
(``python -m mpibench _replacement``) and what the survivors hand it. The
fault layer carries the continuation without reading it; the job layer
(:mod:`mpibench.job.suite`) reads it to know where the replacement enters:

* :class:`SingleRun` -- the job is one ``run``: finish it and report.
* :class:`MainJobAt` -- the main job, inside its scenario ``index``: after that
  scenario, go on with ``index + 1``.
* :class:`BetweenScenarios` -- spawned to restore the world size before
  scenario ``index`` of the main job (not inside any scenario).

Both main-job continuations carry the outcomes of the scenarios already
run: whichever process ends up first in the membership prints the closing
table, and it may have joined late.

The fault layer's own continuation (resume a scenario at a step) is
:class:`mpibench.faults.respawn.Resume`, which holds one of these as ``after``.
"""
from __future__ import annotations

from dataclasses import dataclass

from mpibench.base.config import RunConfig


@dataclass(frozen=True)
class MainJob:
    """The main job's plan and what it reports at the end."""

    plan: tuple[RunConfig, ...]
    world_size: int
    out: str
    base: RunConfig
    calibration: object  # results.job calibration, or None when benchmarks are left out
    start_time: float  # time.time() at the start, for the closing wall time


@dataclass(frozen=True)
class SingleRun:
    out: str  # the job's output folder
    index: int = 0  # the run's one case


@dataclass(frozen=True)
class MainJobAt:
    job: MainJob
    index: int  # the scenario of the plan being run
    done: tuple = ()  # (config, summary) of the scenarios before it, for the closing table

    @property
    def out(self) -> str:
        return self.job.out


@dataclass(frozen=True)
class BetweenScenarios:
    job: MainJob
    index: int  # the scenario of the plan that comes next
    done: tuple = ()  # (config, summary) of the scenarios before it, for the closing table

    @property
    def out(self) -> str:
        return self.job.out


Continuation = SingleRun | MainJobAt | BetweenScenarios
