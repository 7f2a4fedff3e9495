"""The sweep driver's side of batches: many cases per launch, and nothing lost when one dies.

Launching ``mpirun`` costs more than a short case: most of a one-job-per-case
sweep is start-up and teardown. So the driver groups cases by worker count
into batches and runs each batch as one ``batch`` job (:mod:`mpibench.job.batch`),
which restores its world size between cases and writes every case's folder
as the case's own ``run`` command would, plus a status file once the case is
done. ``--jobs`` batches run at a time.

A batch that dies (crash) or stops finishing cases (hang: no case done within
the case deadline) is killed; the case it died in is the finding, with the
batch's stderr, and the cases it had not reached go back to the queue as a new
batch. A size of 1 is the one-job-per-case sweep (``run`` per case).
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path

from .alone import write_batch_replay
from .cases import STATUS_FILE, Case, Outcome, batch_case_job, judge, replay_command, run_case, write_case
from .launch import kill_all, mpibench_command, run_job_again_if_unstarted


@dataclass(frozen=True)
class Batch:
    label: str
    workers: int
    cases: tuple[Case, ...]


class BatchQueue:
    """Batches of up to ``size`` cases of one worker count, in plan order.

    Cases are pulled from ``cases`` (which may be endless) only as batches are
    asked for; the rest of a batch that died is handed out first. After
    ``until`` (a ``time.monotonic()`` value) or :meth:`stop` no batch is handed out.
    """

    def __init__(self, cases: Iterable[Case], size: int, until: float | None = None):
        self._source, self.size, self.until = iter(cases), max(1, size), until
        self._pending: dict[int, list[Case]] = {}
        self._retry: deque[Batch] = deque()
        self._lock = threading.Lock()
        self._stopped = False
        self._exhausted = False
        self.order: dict[str, int] = {}  # case id -> position in the plan
        self.batches = 0

    def next(self) -> Batch | None:
        with self._lock:
            if self._stopped or (self.until is not None and time.monotonic() >= self.until):
                return None
            if self._retry:
                return self._retry.popleft()
            while not self._exhausted and not any(len(v) >= self.size for v in self._pending.values()):
                case = next(self._source, None)
                if case is None:
                    self._exhausted = True
                    break
                self.order[case.case_id] = len(self.order)
                self._pending.setdefault(case.workers, []).append(case)
            full = [w for w, v in self._pending.items() if len(v) >= self.size] or \
                [w for w, v in self._pending.items() if v]
            if not full:
                return None
            workers = full[0]
            cases, self._pending[workers] = self._pending[workers][:self.size], self._pending[workers][self.size:]
            return self._batch(workers, cases)

    def requeue(self, cases: list[Case]) -> None:
        if cases:
            with self._lock:
                self._retry.append(self._batch(cases[0].workers, cases))

    def stop(self) -> None:
        with self._lock:
            self._stopped = True

    def _batch(self, workers: int, cases: list[Case]) -> Batch:
        self.batches += 1
        return Batch(f"b{self.batches:04d}-n{workers}", workers, tuple(shrinking_last(cases)))


def shrinking_last(cases: list[Case]) -> list[Case]:
    """``cases`` with one that ends smaller (a kill under shrink) moved last: after the last
    case a batch restores nothing, so that saves spawning replacements once."""
    shrinking = [c for c in cases if c.recovery == "shrink" and any(e.kind == "kill" for e in c.schedule.events)]
    if not shrinking or cases[-1] in shrinking:
        return list(cases)
    return [c for c in cases if c is not shrinking[-1]] + [shrinking[-1]]


def case_folder(out: Path, case: Case) -> Path:
    return out / "cases" / case.case_id


def run_batch(batch: Batch, out: Path, mpiexec: list[str], case_deadline_s: float) -> tuple[list[Outcome], list[Case]]:
    """Run ``batch`` as one job; the outcomes of the cases it reached, and those it did not."""
    if len(batch.cases) == 1:
        case = batch.cases[0]
        return [run_case(case, case_folder(out, case), mpiexec, case_deadline_s)], []
    folder = out / "batches" / batch.label
    folder.mkdir(parents=True, exist_ok=True)
    runs = [case_folder(out, c) / "run" for c in batch.cases]
    entries = []
    for case, run_dir in zip(batch.cases, runs):
        schedule = write_case(case, run_dir.parent)
        (run_dir / STATUS_FILE).unlink(missing_ok=True)  # a status left by an earlier sweep is no evidence
        entries.append({"case": case.case_id, "args": case.run_args(schedule, run_dir)})
    plan = folder / "plan.json"
    plan.write_text(json.dumps({"schema": 1, "workers": batch.workers, "cases": entries}, indent=1) + "\n")
    cmd = mpibench_command(mpiexec, batch.workers, ["batch", str(plan)])
    job = run_job_again_if_unstarted(cmd, folder, case_deadline_s * len(batch.cases),
                                         started=lambda: launch_began(runs),
                                         stalled=_stall_watch(runs, case_deadline_s))
    outcomes, rest = salvage(batch, runs, job, mpiexec, case_deadline_s)
    again = write_batch_replay(folder, batch.workers, entries, mpiexec)
    for outcome in outcomes:
        outcome.batch_replay = again
    return outcomes, rest


def remove_unreached(out: Path, done: set[str]) -> list[str]:
    """Remove the folders of cases no launch began (only the schedule the driver wrote is in
    them): kept, they would look like cases whose results went missing. Returns their ids."""
    import shutil

    removed = []
    for folder in sorted((out / "cases").glob("*/")):
        if folder.name not in done and {p.name for p in folder.iterdir()} <= {"schedule.toml"}:
            shutil.rmtree(folder)
            removed.append(folder.name)
    return removed


def launch_began(runs: list[Path]) -> bool:
    """Whether the batch job began any case (each case makes its output folder first)."""
    return any(r.exists() for r in runs)


def _stall_watch(runs: list[Path], case_deadline_s: float) -> Callable[[], bool]:
    """True once no further case of the batch has finished for ``case_deadline_s``."""
    seen = {"done": 0, "since": time.monotonic()}

    def stalled() -> bool:
        done = sum((r / STATUS_FILE).exists() for r in runs)
        if done != seen["done"]:
            seen["done"], seen["since"] = done, time.monotonic()
        return time.monotonic() - seen["since"] > case_deadline_s

    return stalled


def salvage(batch: Batch, runs: list[Path], job, mpiexec: list[str], case_deadline_s: float):
    """Judge each case the batch finished; the case it died in is a finding; the rest go back."""
    outcomes: list[Outcome] = []
    for i, (case, run_dir) in enumerate(zip(batch.cases, runs)):
        replay = replay_command(mpiexec, case, run_dir.parent)
        if (run_dir / STATUS_FILE).exists():
            case_job = batch_case_job(run_dir, job, last=i == len(batch.cases) - 1)
            outcomes.append(judge(case, run_dir, case_job, replay, in_batch=True))
            continue
        died = replace(job, deadline_s=case_deadline_s) if job.hung else job
        outcomes.append(judge(case, run_dir, died, replay, in_batch=True,
                              launch_started=launch_began(runs)))
        return outcomes, list(batch.cases[i + 1:])
    return outcomes, []


def run_queue(queue: BatchQueue, jobs: int, run: Callable[[Batch], tuple[list[Outcome], list[Case]]],
              record: Callable[[list[Outcome]], None]) -> None:
    """``jobs`` threads take batches from ``queue`` until it is empty; ``record`` gets each
    batch's outcomes. An interrupt stops the queue and kills the running jobs."""
    def worker() -> None:
        while (batch := queue.next()) is not None:
            outcomes, rest = run(batch)
            queue.requeue(rest)
            record(outcomes)

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    futures = [pool.submit(worker) for _ in range(max(1, jobs))]
    try:
        while True:
            done, pending = wait(futures, timeout=0.5, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()  # a worker's exception ends the sweep
            if not pending:
                break
    except BaseException:
        queue.stop()
        kill_all()  # the running jobs end now; what finished is kept
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
