"""One case's history, checked for completeness and cut into steps.

A case can be judged only if every worker's history is there: the file of
each worker that started the case, a replacement's file for every worker
killed under respawn, and an ending for each file (``close``, or a scheduled
kill of that worker that explains why it stops). Otherwise the verdict is
unknown, naming the file.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from . import seeding
from .history import Attempt, CannotJudge, WorkerFile, read_case_json, read_worker_files
from .oracle import Expectation, FaultPlan
from .walk import Walker


@dataclass
class StepView:
    """Everything the workers recorded about one step, and what the oracle expects of it."""

    step: int
    expect: Expectation
    attempts: list = field(default_factory=list)
    resyncs: list = field(default_factory=list)  # (worker, digest) taken before this step
    start_digest: str = ""  # the parameters the last commit left (what this step must start from)
    start_step: int | None = None  # that commit's step (None: the initial parameters)

    # Cached: a view is complete before it is handed to the invariants, which only read it.
    @cached_property
    def commits(self) -> list[Attempt]:
        return [a for a in self.attempts if a.decision == "commit"]

    @cached_property
    def active(self) -> list[Attempt]:
        """Commits of workers that took part (contributed or were dropped late), not stalled ones."""
        return [a for a in self.commits if a.role != "stall"]

    @cached_property
    def agreed(self) -> Attempt | None:
        """The commit the step's record stands on: the lowest worker id's."""
        active = sorted(self.active, key=lambda a: (a.worker, a.file))
        return active[0] if active else None


class CaseModel:
    """The case as the checker sees it: its info, its files and its steps."""

    def __init__(self, case_dir: str, reference_every: int | None = None):
        self.dir = case_dir
        self.name = os.path.basename(os.path.normpath(case_dir))
        self.info = read_case_json(case_dir)
        self.config = self.info["config"]
        self.plan = FaultPlan.from_case(self.info)
        self.steps = int(self.config["steps"])
        self.check_every = int(self.config.get("check_every", 1))
        # The float64 reference runs on steps divisible by this: the run's --check-every for the
        # online check, 1 (every step) for the verdict of record.
        self.reference_every = self.check_every if reference_every is None else int(reference_every)
        self.files = read_worker_files(case_dir)
        self._require_complete()
        self.state: dict = {}  # what invariants carry from step to step

    # ------------------------------------------------------------------ completeness
    def _where(self, name: str) -> str:
        return f"history/{self.name}/{name}"

    def _require_complete(self) -> None:
        originals = {f.worker for f in self.files if not f.replacement}
        for w in range(self.plan.world_size):
            if w not in originals:
                raise CannotJudge(f"{self._where(f'worker-{w}.jsonl')} missing")
        if self.plan.recovery == "respawn":
            replaced = {f.worker for f in self.files if f.replacement}
            for w, at in sorted(self.plan.killed_workers().items()):
                if at < self.steps and w not in replaced:
                    raise CannotJudge(f"{self._where(f'worker-{w}.joined-{at:04d}.jsonl')} missing "
                                      f"(worker {w} is killed at step {at} under respawn)")
        for f in self.files:
            self._require_ending(f)

    def _require_ending(self, f: WorkerFile) -> None:
        if f.closed_steps is None:
            kills = [at for rank, at in self.plan.kills if rank == f.worker and at >= f.joined_step]
            if not kills:
                raise CannotJudge(f"{self._where(f.name)} stops at step {f.last_step} without 'close' "
                                  f"and no scheduled kill explains it")
        elif f.closed_steps < self.steps:
            raise CannotJudge(f"{self._where(f.name)} closed after {f.closed_steps} of {self.steps} steps")

    # ------------------------------------------------------------------ what the seed decides
    @cached_property
    def data(self) -> tuple[np.ndarray, np.ndarray]:
        c = self.config
        return seeding.dataset(self.info["seed"], c["samples"], c["features"], c["classes"])

    @cached_property
    def shards(self) -> list[np.ndarray]:
        return seeding.shards(self.info["seed"], self.config["samples"], self.plan.world_size)

    def walker(self) -> Walker:
        return Walker(self.info["seed"], self.shards, int(self.config["batch_size"]))

    @cached_property
    def initial_params(self) -> np.ndarray:
        c = self.config
        return seeding.initial_params(self.info["seed"], c["features"], c["hidden"], c["classes"])

    def initial_digest(self) -> str:
        from .history import form, params_digest

        return params_digest(self.initial_params, form(self.info.get("schema")))

    # ------------------------------------------------------------------ steps
    def views(self):
        """Step views in step order; each knows what the last commit before it left."""
        by_step: dict[int, StepView] = {}
        for f in self.files:
            for a in f.attempts:
                self._view(by_step, a.step).attempts.append(a)
            for step, d in f.resyncs:
                self._view(by_step, step).resyncs.append((f.worker, d))
        start, start_step = self.initial_digest(), None
        for step in range(self.steps):
            view = self._view(by_step, step)
            view.start_digest, view.start_step = start, start_step
            yield view
            if view.agreed is not None:
                start, start_step = view.agreed.params_after, step

    def _view(self, by_step: dict, step: int) -> StepView:
        if step not in by_step:
            by_step[step] = StepView(step, self.plan.expect(step))
        return by_step[step]
