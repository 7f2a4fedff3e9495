"""Gradient buckets: which tensors are synchronised together, as the frameworks form them.

* DDP (PyTorch ``DistributedDataParallel``; Li et al., "PyTorch Distributed", VLDB 2020):
  tensors are taken in the reverse of their registration order (the order the backward pass
  produces them), one dtype per bucket, and a bucket closes as soon as it holds at least its
  limit: the first at ``first_bucket_bytes`` (1 MiB, so communication starts early), every later
  one at ``bucket_cap_bytes`` (25 MiB). A tensor larger than the limit makes a bucket of its own.
* Horovod tensor fusion (Sergeev & Del Balso 2018; defaults of Horovod 0.21 on: 128 MiB fusion
  buffer, 1 ms cycle): at each cycle the tensors that became ready since the last one are fused,
  in the order they became ready and one dtype at a time, into buffers of at most the threshold;
  a tensor larger than the threshold is reduced alone. A threshold of 0 turns fusion off.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .tensor import Tensor

MIB = 1 << 20
DDP_BUCKET_CAP_BYTES = 25 * MIB
DDP_FIRST_BUCKET_BYTES = 1 * MIB
HOROVOD_FUSION_THRESHOLD_BYTES = 128 * MIB
HOROVOD_CYCLE_TIME_S = 1e-3


@dataclass(frozen=True)
class Bucket:
    """Indices into the profile's tensors, in the order they are packed."""
    tensors: tuple[int, ...]
    nbytes: int
    dtype: str


def ddp_buckets(tensors: Sequence[Tensor], bucket_cap_bytes: int = DDP_BUCKET_CAP_BYTES,
                first_bucket_bytes: int = DDP_FIRST_BUCKET_BYTES) -> list[Bucket]:
    """DDP's assignment, buckets in the order their gradients complete."""
    if bucket_cap_bytes <= 0 or first_bucket_bytes <= 0:
        raise ValueError("bucket sizes must be positive")
    open_buckets: dict[str, list[int]] = {}
    sizes: dict[str, int] = {}
    closed: dict[str, int] = {}  # how many buckets of each dtype closed so far (the first has its own limit)
    done: list[Bucket] = []
    for index in reversed(range(len(tensors))):
        t = tensors[index]
        open_buckets.setdefault(t.dtype, []).append(index)
        sizes[t.dtype] = sizes.get(t.dtype, 0) + t.nbytes
        limit = first_bucket_bytes if closed.get(t.dtype, 0) == 0 else bucket_cap_bytes
        if sizes[t.dtype] >= limit:
            done.append(Bucket(tuple(open_buckets.pop(t.dtype)), sizes.pop(t.dtype), t.dtype))
            closed[t.dtype] = closed.get(t.dtype, 0) + 1
    for dtype, members in open_buckets.items():
        done.append(Bucket(tuple(members), sizes[dtype], dtype))
    return done


def horovod_buckets(tensors: Sequence[Tensor], ready_s: Sequence[float],
                    threshold_bytes: int = HOROVOD_FUSION_THRESHOLD_BYTES,
                    cycle_time_s: float = HOROVOD_CYCLE_TIME_S) -> list[tuple[float, Bucket]]:
    """Horovod's fused buffers with the cycle each is started at, given when each tensor's
    gradient became ready (seconds from the start of the backward pass)."""
    if len(ready_s) != len(tensors):
        raise ValueError(f"{len(ready_s)} ready times for {len(tensors)} tensors")
    if threshold_bytes < 0 or not cycle_time_s > 0:
        raise ValueError("the fusion threshold must be 0 or more and the cycle time positive")
    order = sorted(range(len(tensors)), key=lambda i: (ready_s[i], -i))
    by_cycle: dict[int, list[int]] = {}
    for i in order:
        # ready at t: negotiated at the first cycle boundary at or after t
        by_cycle.setdefault(math.ceil(ready_s[i] / cycle_time_s - 1e-12), []).append(i)
    started: list[tuple[float, Bucket]] = []
    for cycle in sorted(by_cycle):
        for dtype in dict.fromkeys(tensors[i].dtype for i in by_cycle[cycle]):
            members, size = [], 0
            for i in (j for j in by_cycle[cycle] if tensors[j].dtype == dtype):
                if members and size + tensors[i].nbytes > threshold_bytes:
                    started.append((cycle * cycle_time_s, Bucket(tuple(members), size, dtype)))
                    members, size = [], 0
                members.append(i)
                size += tensors[i].nbytes
            started.append((cycle * cycle_time_s, Bucket(tuple(members), size, dtype)))
    return started
