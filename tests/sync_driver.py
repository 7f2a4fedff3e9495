"""MPI-side test driver: many cases of every hand-written strategy in one mpirun launch.

Run as ``mpirun -n W python tests/sync_driver.py``. For every ``p`` from 1 to
W the first ``p`` ranks form a communicator, and every case (strategy, vector
length, bucket cap, shard count, counts with zero-count workers) is compared
with MPI's own Allreduce on the same inputs: equal within float32 summation
tolerance, and bitwise identical across ranks. Prints ``OK <cases>`` on rank
0; any failure raises, which aborts the job with the case in the message.
"""
from __future__ import annotations

import hashlib
import sys
import time

import numpy as np
from mpi4py import MPI

from mpibench.base import seeds
from mpibench.sync.comm import Comm
from mpibench.kernels import NumpyBackend
from mpibench.sync import make_strategy

EPS32 = float(np.finfo(np.float32).eps)
# A calibration under which bandwidth always dominates (auto then chooses halving/doubling).
TINY_ALPHA = {"alpha_s": 1e-12, "beta_s_per_byte": 1e-9, "gamma_cache_s_per_byte": 1e-9,
              "gamma_memory_s_per_byte": 1e-9}
# At p = 2 this puts auto's switch at 3800 bytes: 4 KiB buckets by halving/doubling, a shorter
# tail by recursive doubling (two algorithms on one buffer).
MIXED = {"alpha_s": 1.9e-6, "beta_s_per_byte": 0.0, "gamma_cache_s_per_byte": 1e-9,
         "gamma_memory_s_per_byte": 1e-9}


def lengths_for(p: int) -> list[int]:
    return sorted({0, 1, max(p - 1, 0), p + 1, 1000, 50_003})


def bucket_caps(length: int) -> list[int]:
    """Tiny caps only on short vectors (every element its own bucket is slow)."""
    caps = [1 << 20, 4096]
    if length <= 1000:
        caps += [4, 12]
    return caps


def inputs(seed: int, worker: int, length: int, zero: bool) -> np.ndarray:
    if zero:
        return np.zeros(length, dtype=np.float32)
    return seeds.generator(seed, seeds.BENCH, 99, worker).standard_normal(length).astype(np.float32)


def digest(a: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=8).hexdigest()


def check_same(comm: Comm, got: np.ndarray, want: np.ndarray, scale: np.ndarray, what: str) -> None:
    tol = 2 * comm.size * EPS32 * scale + 1e-30
    bad = np.abs(got.astype(np.float64) - want) > tol
    if bad.any():
        i = int(np.argmax(bad))
        raise AssertionError(f"{what}: element {i} got {got[i]!r} want {want[i]!r}")
    digests = comm.mpi.allgather(digest(got))
    if len(set(digests)) != 1:
        raise AssertionError(f"{what}: ranks differ: {digests}")


def reduce_cases(comm: Comm, backend, p: int) -> int:
    cases = 0
    for length in lengths_for(p):
        # Workers 1 and 4 (when present) contribute zeros: zero-count workers.
        local = inputs(length, comm.rank, length, zero=comm.rank in (1, 4))
        want = np.zeros(length, dtype=np.float64)
        scale = np.zeros(length, dtype=np.float64)
        for r in range(p):
            x = inputs(length, r, length, zero=r in (1, 4)).astype(np.float64)
            want += x
            scale += np.abs(x)
        for name, options in variants(length, p):
            strategy = make_strategy(name, comm, backend, max(length - 1, 0), options)
            buf = backend.zeros(length)
            for _ in range(2):  # twice: the cached views must serve a second call
                buf[:] = local
                reduction = strategy.reduce(buf)
            check_same(comm, buf, want, scale, f"p={p} {name} {options} length={length}")
            if options.get("calibration") is MIXED and p == 2 and length == 50_003:
                assert reduction.algorithm == "auto:rabenseifner+rd", reduction.algorithm
            assert reduction.total_length == length
            assert sorted(o for o, n in reduction.pieces if n) == sorted(
                {o for o, n in reduction.pieces if n}), "pieces repeat"
            strategy.close()
            cases += 1
    return cases


def variants(length: int, p: int):
    for cap in bucket_caps(length):
        yield "ring", {"bucket_bytes": cap}
    for shards in sorted({0, 1, 3, p + 2}):
        yield "ps", {"ps_shards": shards}
    for cap in bucket_caps(length)[:3]:
        yield "rd", {"bucket_bytes": cap}
        yield "rabenseifner", {"bucket_bytes": cap}
    for per_node in sorted({0, 1, 2, 3, p}):
        yield "hier", {"bucket_bytes": 4096, "ranks_per_node": per_node}
    yield "hier", {"bucket_bytes": 1 << 20, "ranks_per_node": 2}  # leaders by halving/doubling
    yield "auto", {"bucket_bytes": 4096}
    yield "auto", {"bucket_bytes": 1 << 20, "calibration": TINY_ALPHA}  # picks rabenseifner
    yield "auto", {"bucket_bytes": 4096, "calibration": MIXED}
    yield "zero-ring", {}  # reduce() = its reduce-scatter + all-gather on a plain buffer
    yield "zero-halving", {}
    yield "hsdp", {}  # in-group reduce-scatter, the replicas' swap, in-group all-gather


def step_cases(comm: Comm, backend, p: int) -> int:
    """Whole synchronize(): PS (its own path) and ring against native, uneven counts."""
    cases = 0
    for n_params in sorted({1, p + 1, 677}):
        count = [0, 5, 16, 1, 0, 9, 3, 7][comm.rank % 8]
        rng = seeds.generator(7, seeds.BENCH, 98, comm.rank)
        grad = rng.standard_normal(n_params).astype(np.float32) * count
        start = seeds.generator(7, seeds.BENCH, 97).standard_normal(n_params).astype(np.float32)
        results = {}
        for name, options in [("native", {}), ("ring", {"bucket_bytes": 8}), ("ps", {"ps_shards": 0}),
                              ("ps", {"ps_shards": p + 3}), ("rd", {"bucket_bytes": 8}),
                              ("rabenseifner", {"bucket_bytes": 64}), ("hier", {"ranks_per_node": 3}),
                              ("auto", {})]:
            strategy = make_strategy(name, comm, backend, n_params, options)
            params = start.copy()
            strategy.synchronize(params, grad, count, 0.1)
            results[(name, str(options))] = (params, strategy.total_count())
            strategy.close()
            cases += 1
        native, total = results[("native", "{}")]
        scale = np.abs(start).astype(np.float64) + 1.0
        for key, (params, got_total) in results.items():
            assert got_total == total, f"{key}: total count {got_total} != {total}"
            check_same(comm, params, native.astype(np.float64), scale, f"p={p} step {key} n={n_params}")
    return cases


def sharded_step_cases(comm: Comm, backend, p: int) -> int:
    """The sharded step against native: lengths 0, 1, fewer than ranks, uneven; the shards
    owned in worker-id order whatever the ranks' order (a replacement's rank)."""
    cases = 0
    for n_params in sorted({0, 1, max(p - 1, 0), p + 1, 677}):
        count = [0, 5, 16, 1, 0, 9, 3, 7][comm.rank % 8]
        grad = seeds.generator(5, seeds.BENCH, 96, comm.rank).standard_normal(n_params).astype(np.float32) * count
        start = seeds.generator(5, seeds.BENCH, 95).standard_normal(n_params).astype(np.float32)
        native = make_strategy("native", comm, backend, n_params, {})
        want = start.copy()
        native.synchronize(want, grad.copy(), count, 0.1)
        for ids in (tuple(range(p)), tuple(reversed(range(p)))):
            ordered = Comm(comm.mpi, ids, deadline_s=60)
            for name in ("zero-ring", "zero-halving", "hsdp"):
                strategy = make_strategy(name, ordered, backend, n_params, {})
                params = start.copy()
                reduction = strategy.synchronize(params, grad.copy(), count, 0.1)
                assert strategy.total_count() == native.total_count(), (name, n_params)
                check_same(comm, params, want.astype(np.float64), np.abs(start) + 1.0, f"p={p} {name} n={n_params}")
                stepped = comm.mpi.allgather(reduction.owned)
                assert sorted(o for mine in stepped for o in mine) == sorted(reduction.shards), (name, stepped)
                if name == "zero-ring":  # shard i belongs to the i-th lowest worker id
                    assert reduction.owners == tuple(sorted(ids)), reduction.owners
                cases += 1
    return cases


def sleeping_barrier(world) -> None:
    """A barrier that sleeps between polls. The ranks outside the communicator of the moment
    wait here for all of its cases; in MPI's own barrier they would poll without pause, and
    with more ranks than CPUs they would take most of the CPU from the ranks at work."""
    request = world.Ibarrier()
    while not request.Test():
        time.sleep(0.002)


def main() -> int:
    world = MPI.COMM_WORLD
    backend = NumpyBackend()
    cases = 0
    for p in range(1, world.Get_size() + 1):
        sub = world.Split(0 if world.Get_rank() < p else MPI.UNDEFINED, world.Get_rank())
        if sub != MPI.COMM_NULL:
            comm = Comm(sub, deadline_s=60)
            cases += reduce_cases(comm, backend, p) + step_cases(comm, backend, p) + sharded_step_cases(comm, backend, p)
            sub.Free()
        sleeping_barrier(world)
    if world.Get_rank() == 0:
        print(f"OK {cases}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # one failing rank must end the job, not hang it
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
