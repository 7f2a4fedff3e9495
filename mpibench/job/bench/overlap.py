"""``bench --profile NAME``: a real model's gradient buckets synchronised during its backward pass,
measured under mpirun.

The backward pass is a timed stand-in: tensor ``i``'s layer takes twice its forward work for the
local batch at ``flops_per_s`` (the device modelled, this host's matmul rate by default), and the
rank does nothing but progress MPI meanwhile, as a rank whose layers run on an accelerator does.
A bucket (DDP's, Horovod's, or one bucket after the backward pass) is started with
``MPI_Iallreduce`` once its gradients are ready; with overlap off every bucket's blocking
``MPI_Allreduce`` runs after the backward pass instead. Per step: the backward's time, each
bucket's sync (from its start to its completion being seen), and the exposed sync, what the step
waits beyond its backward pass. Each bucket's sum is checked exactly (integer-valued inputs).
The figures are measured; ``predict --profile`` models the same step at any scale.
"""
from __future__ import annotations

import csv
import os
import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np
from mpi4py import MPI

from mpibench.base import stats
from mpibench.profiles import Profile
from mpibench.profiles.buckets import Bucket, ddp_buckets, horovod_buckets

POLICIES = ("ddp", "horovod", "none")
STEP_COLUMNS = ("step", "profile", "policy", "overlap", "ranks", "buckets", "backward_s", "sync_s", "exposed_s",
                "step_s", "errors", "tag")
POLL_S = 20e-6  # how often a rank standing in for a layer tests the buckets in flight


@dataclass(frozen=True)
class OverlapPlan:
    profile: Profile
    policy: str = "ddp"
    overlap: bool = True
    local_batch: int = 8
    flops_per_s: float = 1e12
    steps: int = 5
    warmup: int = 1


@dataclass
class StepRow:
    step: int
    profile: str
    policy: str
    overlap: bool
    ranks: int
    buckets: int
    backward_s: float
    sync_s: float  # every bucket's sync, start to completion, added up
    exposed_s: float  # from the end of the backward pass to the last bucket's completion
    step_s: float
    errors: int
    tag: str = "measured"


def layer_seconds(profile: Profile, local_batch: int, flops_per_s: float) -> list[float]:
    """Each tensor's share of the backward pass, in registration order."""
    return [2.0 * t.forward_flops_per_sample * local_batch / flops_per_s for t in profile.tensors]


def bucket_schedule(plan: OverlapPlan) -> list[tuple[float, Bucket]]:
    """(seconds into the backward pass at which it may start, bucket), in start order."""
    tensors, layer_s = plan.profile.tensors, layer_seconds(plan.profile, plan.local_batch, plan.flops_per_s)
    ready, clock = [0.0] * len(tensors), 0.0
    for i in reversed(range(len(tensors))):
        clock += layer_s[i]
        ready[i] = clock
    if plan.policy == "ddp":
        return [(max(ready[i] for i in b.tensors), b) for b in ddp_buckets(tensors)]
    if plan.policy == "horovod":
        return horovod_buckets(tensors, ready)
    every = tuple(reversed(range(len(tensors))))
    return [(clock, Bucket(every, plan.profile.nbytes, "mixed"))]


class Buffers:
    """Each bucket's send and receive buffers, float32 of the bucket's bytes, allocated once:
    rank r sends ``(r + 1) * base`` with small integer ``base``, so the sum is exact."""

    def __init__(self, schedule, rank: int, size: int):
        self.sends, self.recvs, self.expected = [], [], []
        for index, (_, bucket) in enumerate(schedule):
            base = (np.arange(max(1, bucket.nbytes // 4), dtype=np.float32) % 7) + index % 3
            self.sends.append(base * (rank + 1))
            self.recvs.append(np.empty_like(base))
            self.expected.append(base * (size * (size + 1) // 2))

    def errors(self) -> int:
        return sum(int(np.count_nonzero(r != e)) for r, e in zip(self.recvs, self.expected))


def _progress_until(deadline: float, inflight: dict, done_at: dict) -> None:
    """Stand in for compute until ``deadline``, testing the buckets in flight meanwhile."""
    while True:
        for index in [i for i, req in inflight.items() if req.Test()]:
            done_at[index] = time.perf_counter()
            del inflight[index]
        now = time.perf_counter()
        if now >= deadline:
            return
        time.sleep(min(POLL_S, deadline - now))


def one_step(world: MPI.Comm, plan: OverlapPlan, schedule, bufs: Buffers, step: int) -> StepRow:
    layer_s = layer_seconds(plan.profile, plan.local_batch, plan.flops_per_s)
    starts = sorted((at, index) for index, (at, _) in enumerate(schedule))
    inflight, started_at, done_at, upcoming = {}, {}, {}, list(starts)
    world.Barrier()
    t0 = deadline = time.perf_counter()
    for i in reversed(range(len(layer_s))):
        deadline += layer_s[i]
        _progress_until(deadline, inflight, done_at)
        while plan.overlap and upcoming and upcoming[0][0] <= deadline - t0 + 1e-12:
            _, index = upcoming.pop(0)
            started_at[index] = time.perf_counter()
            inflight[index] = world.Iallreduce(bufs.sends[index], bufs.recvs[index], MPI.SUM)
    backward_end = time.perf_counter()
    for _, index in upcoming:  # overlap off (or a bucket due after the last layer): now, in order
        started_at[index] = time.perf_counter()
        if plan.overlap:
            inflight[index] = world.Iallreduce(bufs.sends[index], bufs.recvs[index], MPI.SUM)
        else:
            world.Allreduce(bufs.sends[index], bufs.recvs[index], MPI.SUM)
            done_at[index] = time.perf_counter()
    while inflight:
        _progress_until(time.perf_counter() + POLL_S, inflight, done_at)
    end = time.perf_counter()
    sync_s = sum(done_at[i] - started_at[i] for i in started_at)
    return StepRow(step, plan.profile.name, plan.policy, plan.overlap, world.Get_size(), len(schedule),
                   backward_end - t0, sync_s, end - backward_end, end - t0, bufs.errors())


def run_overlap(world: MPI.Comm, plan: OverlapPlan, out: str, stream=None) -> int:
    """Warm-up steps, then ``plan.steps`` timed ones; rank 0 writes overlap.csv (the slowest rank's
    figures each step) and prints the medians. Exit 1 when any bucket's sum was wrong."""
    schedule = bucket_schedule(plan)
    bufs = Buffers(schedule, world.Get_rank(), world.Get_size())
    rows = []
    for step in range(plan.warmup + plan.steps):
        row = one_step(world, plan, schedule, bufs, step - plan.warmup)
        row = _slowest(world, row)
        if step >= plan.warmup:
            rows.append(row)
    if world.Get_rank() == 0:
        write_rows(os.path.join(out, "overlap.csv"), rows)
        for line in summary_lines(plan, rows):
            print(line, file=stream, flush=True)
    return 1 if any(r.errors for r in rows) else 0


def _slowest(world: MPI.Comm, row: StepRow) -> StepRow:
    """The step as its slowest rank saw it (the step ends when the last rank's sync does)."""
    mine = np.array([row.step_s, row.exposed_s, row.backward_s, row.sync_s])
    worst = np.empty_like(mine)
    world.Allreduce(mine, worst, MPI.MAX)
    errors = np.array([row.errors], dtype=np.int64)
    every = np.empty_like(errors)
    world.Allreduce(errors, every, MPI.SUM)
    row.step_s, row.exposed_s, row.backward_s, row.sync_s = (float(v) for v in worst)
    row.errors = int(every[0])
    return row


def write_rows(path: str, rows: list[StepRow]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=STEP_COLUMNS)
        writer.writeheader()
        for r in rows:
            writer.writerow(asdict(r))


def summary_lines(plan: OverlapPlan, rows: list[StepRow]) -> list[str]:
    head = rows[0]
    exposed = stats.median_interval([r.exposed_s for r in rows])
    return [f"# profile {plan.profile.name}: {head.buckets} {plan.policy} bucket(s), overlap "
            f"{'on' if plan.overlap else 'off'}, local batch {plan.local_batch} at "
            f"{plan.flops_per_s / 1e12:.3g} TFLOP/s (timed stand-in), {head.ranks} ranks [measured]",
            f"backward {statistics.median(r.backward_s for r in rows) * 1e3:.2f} ms, sync "
            f"{statistics.median(r.sync_s for r in rows) * 1e3:.2f} ms, exposed {exposed.median * 1e3:.2f} ms "
            f"[{exposed.low * 1e3:.2f}, {exposed.high * 1e3:.2f}] over {exposed.n} steps, step "
            f"{statistics.median(r.step_s for r in rows) * 1e3:.2f} ms, errors {sum(r.errors for r in rows)}"]


def overlap_command(plan: OverlapPlan, out: str) -> int:
    """``bench --profile``: the launch's fingerprint and host note first, then the steps."""
    from . import fingerprint
    from .run import oversubscription

    world = MPI.COMM_WORLD
    fingerprint.record(world, out)
    note = oversubscription(world, out)
    if note and world.Get_rank() == 0:
        print(f"# {note}", flush=True)
    status = run_overlap(world, plan, out)
    if status and world.Get_rank() == 0:
        print("bench: a bucket's sum was wrong (overlap.csv, column errors)", flush=True)
    return status
