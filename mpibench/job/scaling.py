"""Measured step time at p = 1, 2, 4, ... up to the world size, inside one job.

Each point trains on a sub-communicator made of the first p ranks of the job,
through the ordinary run path (:func:`mpibench.job.runner.run_scenario`, so the
same :class:`~mpibench.engine.worker.Trainer` loop, data, shards and seed as any run),
while the other ranks sleep on a non-blocking barrier. The step times come from
the trainer's own step records, kept in memory instead of a CSV.

Strong scaling keeps the global batch fixed and splits it over p ranks; weak
scaling keeps the per-rank batch fixed. The model here is larger than the
scenarios' default so that computation, not Python overhead, fills a step.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from mpi4py import MPI

from mpibench.base import stats
from .calibrate import LOOP_REPEATS, LOOP_WARMUP as WARMUP_STEPS  # the one-rank calibration skips as many
from .calibrate import one_rank_step_s
from .timing import blas_one_thread, idle_until_released
from .hostload import HostLoad
from .memrecords import MemoryRecords
from .stepparts import BESIDE, PART_COLUMNS, one_rank_parts, split as split_parts

BESIDE_PARTS = tuple(f"one_rank_{k}" for k in BESIDE)

SCALING_COLUMNS = ["strategy", "mode", "ranks", "local_batch", "global_batch", "bytes", "steps",
                   "step_time_s", "step_time_p90_s", "sync_time_s", "sync_wait_s", "one_rank_step_s", "speedup",
                   "efficiency", "other_load_cores", "violations", "tag", "assumptions",
                   *PART_COLUMNS, *BESIDE_PARTS]  # the step part by part (job/stepparts.py)


@dataclass(frozen=True)
class ScalingPlan:
    """What the scaling measurement trains: model size, batches, steps."""

    features: int = 64
    hidden: int = 256
    classes: int = 10
    samples: int = 4096
    weak_batch: int = 128  # per rank
    strong_batch: int = 1024  # global
    steps: int = 12
    rounds: int = 3  # interleaved (one-rank loop, point) pairs per point; medians kept

    def config(self, base, strategy: str, local_batch: int):
        return replace(base, strategy=strategy, scenario="none", features=self.features,
                       hidden=self.hidden, classes=self.classes, samples=self.samples,
                       batch_size=local_batch, steps=self.steps, check_every=10 ** 6)

    def local_batch(self, mode: str, p: int) -> int:
        return self.weak_batch if mode == "weak" else max(1, round(self.strong_batch / p))

    def sync_bytes(self) -> int:
        from mpibench.engine.model import Shapes

        return (Shapes(self.features, self.hidden, self.classes).n_params + 1) * 4


def rank_counts(world_size: int) -> list[int]:
    """1, 2, 4, ... below the world size, then the world size itself."""
    counts, p = [], 1
    while p < world_size:
        counts.append(p)
        p *= 2
    return counts + [world_size]


def measure_point(world: MPI.Comm, run, config, p: int, backend) -> dict | None:
    """Train ``config`` with ``run`` (the runner's ``run_scenario``) on the first ``p`` ranks;
    rank 0 gets the timing row, others None."""
    rank = world.Get_rank()
    load = HostLoad(world)
    sub = world.Split(0 if rank < p else MPI.UNDEFINED, rank)
    row = None
    if sub != MPI.COMM_NULL:
        records = MemoryRecords()
        with blas_one_thread():
            summary = run(config, sub, records, backend)
        own = records.own_sync_s[WARMUP_STEPS:] or records.own_sync_s
        per_rank = sub.gather(stats.median_or_none(own), root=0)
        tables = sub.gather(records.own_parts, root=0)
        sub.Free()
        if rank == 0:
            row = {**_timing_row(records.steps.rows, summary), "sync_wait_s": _spread(per_rank),
                   **split_parts(tables, WARMUP_STEPS)}
    idle_until_released(world)
    other = load.other_cores()  # every rank takes part: it sums the job's CPU time
    if row is not None:
        row["other_load_cores"] = other
    return row


def measure_rounds(world: MPI.Comm, run, config, p: int, backend, rounds: int) -> dict | None:
    """``rounds`` times the one-rank loop beside the point, then the point itself; rank 0 gets
    one row of medians over the rounds (``one_rank_step_s`` included), others None.

    Interleaved, both halves of each pair see the same state of the host; one pair alone
    was seen 1.6x apart when the host changed speed between its halves."""
    pairs = []
    for _ in range(rounds):
        alone, parts = one_rank_beside(world, run, config, p, repeats=1)
        row = measure_point(world, run, config, p, backend)
        if row is not None:
            pairs.append((alone, row, parts))
    if not pairs:
        return None
    rows = [row for _, row, _ in pairs]
    medians = {key: _median([r.get(key) for r in rows])
               for key in ("step_time_s", "step_time_p90_s", "sync_time_s", "sync_wait_s", "other_load_cores",
                           *PART_COLUMNS)}
    beside = {f"one_rank_{k}": _median([parts.get(k) for _, _, parts in pairs]) for k in BESIDE}
    return {**medians, **beside, "steps": sum(r["steps"] for r in rows),
            "violations": sum(r["violations"] for r in rows),
            "one_rank_step_s": _median([alone for alone, _, _ in pairs])}


def _median(values) -> float | None:
    return stats.median_or_none(values)


def one_rank_beside(world: MPI.Comm, run, config, p: int, repeats: int = LOOP_REPEATS) -> tuple:
    """The one-rank loop's step time at ``config``'s batch and strategy, run right
    before a point, on each of its first ``p`` ranks at once: rank 0's figure and its
    parts (compute, evidence, check medians), (None, {}) on the others.

    Right before: this host's compute speed was seen to change by 1.5x within
    seconds, so a calibration taken minutes earlier misjudges the point. On p
    ranks at once: the local work then shares the host (memory bandwidth, caches,
    co-tenants) the way it does inside the step."""
    world.Barrier()  # start together, so the p loops overlap
    seconds, rows = None, []
    if world.Get_rank() < p:
        with blas_one_thread():
            seconds = one_rank_step_s(run, config, config.batch_size, config.strategy, repeats, parts=rows)
    idle_until_released(world)
    tables = world.gather(rows if world.Get_rank() < p else None, root=0)  # untimed: the loops are done
    if world.Get_rank() != 0:
        return None, {}
    return seconds, one_rank_parts([t for t in tables if t is not None], 0)


def _spread(per_rank: list) -> float | None:
    """Longest less shortest of the ranks' median sync times: how long, per step, the rank
    that reaches the sync first waits for the last (a rank's sync ends when the last arrives)."""
    known = [t for t in per_rank if t is not None]
    return max(known) - min(known) if len(known) > 1 else None


def _timing_row(rows: list[dict], summary) -> dict:
    kept = rows[WARMUP_STEPS:] or rows
    step = np.array([r["step_time_s"] for r in kept])
    sync = np.array([r["sync_time_s"] for r in kept])
    return {"steps": len(kept), "step_time_s": stats.median(step),
            "step_time_p90_s": stats.percentile(step, 90), "sync_time_s": stats.median(sync),
            "violations": summary.violations}


def measure(world: MPI.Comm, run, base, strategies, backend, plan: ScalingPlan = ScalingPlan(),
            progress=None) -> list[dict]:
    """Every (strategy, mode, p) point, each trained by ``run``; rank 0 returns the rows, others []."""
    rows = []
    # Untimed: the first one-rank loop after the benchmarks ran ~1.6x slow in every run
    # tried (warm-up), and would have been the first point's figure.
    one_rank_beside(world, run, plan.config(base, strategies[0], plan.strong_batch), world.Get_size())
    for strategy in strategies:
        for mode in ("strong", "weak"):
            counts = rank_counts(world.Get_size())
            if progress:
                batch = f"global batch {plan.strong_batch}" if mode == "strong" else f"batch {plan.weak_batch} per rank"
                progress(f"scaling: {strategy}, {mode}, p = {', '.join(map(str, counts))} ({batch}) ...")
            for p in counts:
                local = plan.local_batch(mode, p)
                row = measure_rounds(world, run, plan.config(base, strategy, local), p, backend, plan.rounds)
                if row is not None:
                    rows.append({"strategy": strategy, "mode": mode, "ranks": p, "local_batch": local,
                                 "global_batch": local * p, "bytes": plan.sync_bytes(),
                                 "tag": "measured", "assumptions": "", **row})
    return add_speedups(rows)


def add_speedups(rows: list[dict]) -> list[dict]:
    """Speedup over p = 1 of the same strategy and mode (strong: t1/tp; weak: p t1/tp)."""
    one = {(r["strategy"], r["mode"], r["tag"]): r["step_time_s"] for r in rows if r["ranks"] == 1}
    for r in rows:
        t1 = one.get((r["strategy"], r["mode"], r["tag"]))
        if t1 is None or not r["step_time_s"]:
            r["speedup"] = r["efficiency"] = None
            continue
        ratio = t1 / r["step_time_s"]
        r["speedup"] = ratio if r["mode"] == "strong" else r["ranks"] * ratio
        r["efficiency"] = r["speedup"] / r["ranks"]
    return rows


def modelled(cal, measured_rows: list[dict], options: dict) -> list[dict]:
    """The model's row for every measured point (same strategy, mode, p and batch); a point's
    local work is the one-rank step measured beside it, where there is one."""
    from mpibench.results import costmodel

    rows = []
    for m in measured_rows:
        if m["tag"] != "measured":
            continue
        point = cal.with_one_rank_step(m["strategy"], m["local_batch"], m.get("one_rank_step_s"))
        sync = costmodel.sync_s(point.in_step(), m["strategy"], m["ranks"], m["bytes"], options)
        beside = {k: m.get(f"one_rank_{k}") for k in BESIDE}
        # A point trains the fault-free scenario: its steps commit without an agreement.
        parts = costmodel.step_parts(point, m["strategy"], m["ranks"], m["bytes"], beside, options, agrees=False)
        predicted = costmodel.step_s(point, m["strategy"], m["ranks"], m["local_batch"], m["bytes"], options,
                                     wait_s=parts["wait_s"])
        rows.append({**{k: m.get(k) for k in ("strategy", "mode", "ranks", "local_batch", "global_batch",
                                              "bytes", "one_rank_step_s", *BESIDE_PARTS)}, **parts,
                     "steps": "", "step_time_s": predicted, "step_time_p90_s": "", "sync_time_s": sync,
                     "other_load_cores": "", "violations": "", "tag": "modelled", "assumptions": costmodel.assumptions_text()})
    return add_speedups(rows)
