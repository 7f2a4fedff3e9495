"""A real model's step with its gradient buckets synchronised during the backward pass, on the
round model: what overlap hides and what it leaves exposed, at any rank count.

The backward pass produces the gradients in the reverse of their registration order, each
tensor after its layer's backward work (twice its forward work, at ``flops_per_s``). A bucket is
ready when its last tensor is; buckets go out one at a time in the order they became ready, as a
single communication stream does (DDP's one NCCL stream, Horovod's background thread), each
taking the round model's time for its bytes under the strategy. Exposed sync is what the step
waits for after the backward pass ends: the figure overlap is meant to shrink. Weak scaling (the
local batch fixed), so the scaling efficiency at p ranks is the step alone over the step at p.
The figures are simulated (the round model), never measured."""
from __future__ import annotations

from dataclasses import dataclass

from mpibench.profiles import Profile
from mpibench.profiles.buckets import (HOROVOD_CYCLE_TIME_S, HOROVOD_FUSION_THRESHOLD_BYTES, Bucket, ddp_buckets,
                                      horovod_buckets)

from .platform import Platform
from .rounds import sync_s

POLICIES = ("ddp", "horovod", "none")  # none: one sync of every gradient after the backward pass


@dataclass(frozen=True)
class StepPrediction:
    ranks: int
    strategy: str
    policy: str
    buckets: int
    compute_s: float  # forward + backward of the local batch
    sync_s: float  # every bucket's sync, end to end, as if nothing overlapped
    exposed_s: float  # what the step waits beyond its compute
    step_s: float
    efficiency: float  # compute_s / step_s: the step alone over the step at p ranks


def backward_ready_s(profile: Profile, local_batch: int, flops_per_s: float) -> list[float]:
    """When each tensor's gradient is complete, from the start of the backward pass."""
    ready = [0.0] * len(profile.tensors)
    clock = 0.0
    for i in reversed(range(len(profile.tensors))):
        clock += 2.0 * profile.tensors[i].forward_flops_per_sample * local_batch / flops_per_s
        ready[i] = clock
    return ready


def _buckets(profile: Profile, policy: str, ready: list[float],
             fusion: tuple[int, float]) -> list[tuple[float, Bucket]]:
    if policy == "ddp":
        return [(max(ready[i] for i in b.tensors), b) for b in ddp_buckets(profile.tensors)]
    if policy == "horovod":
        return horovod_buckets(profile.tensors, ready, *fusion)
    if policy == "none":
        every = tuple(reversed(range(len(profile.tensors))))
        return [(max(ready), Bucket(every, profile.nbytes, "mixed"))]
    raise ValueError(f"unknown bucket policy {policy!r}: one of {', '.join(POLICIES)}")


def predict_step(plat: Platform, profile: Profile, strategy: str, ranks: int, policy: str = "ddp",
                 local_batch: int = 32, flops_per_s: float = 1e12,
                 fusion: tuple[int, float] = (HOROVOD_FUSION_THRESHOLD_BYTES, HOROVOD_CYCLE_TIME_S),
                 ) -> StepPrediction:
    """``fusion``: Horovod's fusion threshold (bytes) and cycle (seconds), for its policy only
    (the defaults are Horovod 0.21's; its code of May 2018 fused 64 MiB every 5 ms)."""
    ready = backward_ready_s(profile, local_batch, flops_per_s)
    backward_s = max(ready, default=0.0)
    forward_s = profile.forward_flops_per_sample * local_batch / flops_per_s
    stream_free_s, total_sync_s = 0.0, 0.0
    started = sorted(_buckets(profile, policy, ready, fusion), key=lambda rb: rb[0])
    for ready_s, bucket in started:
        took_s = sync_s(plat, strategy, ranks, bucket.nbytes)
        stream_free_s = max(stream_free_s, ready_s) + took_s
        total_sync_s += took_s
    exposed_s = max(0.0, stream_free_s - backward_s)
    compute_s = forward_s + backward_s
    step_s = compute_s + exposed_s
    return StepPrediction(ranks, strategy, policy, len(started), compute_s, total_sync_s, exposed_s, step_s,
                          compute_s / step_s if step_s > 0 else 1.0)
