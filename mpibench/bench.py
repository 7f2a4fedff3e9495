"""Collective microbenchmark: every strategy's ``reduce`` timed and checked, size by size.

The harness owns warm-up, timing, result checking and output; a strategy only
reduces (the nccl-tests split). For each strategy and message size:

* **Inputs** are a pure function of ``(seed, rank, index)``: ``x[r, i] = (A[i] +
  r * B[i]) / 4`` with small integer tables ``A``, ``B`` drawn from the seeded
  generator. Every rank therefore knows the exact expected sum without extra
  communication, ``(p * A + B * p(p-1)/2) / 4``.
* **Timing**: ``warmup`` untimed calls, then ``iterations`` timed calls. Before
  each call the buffer is refilled with the rank's inputs and the ranks meet
  at a barrier (neither is timed); a rank times its own ``reduce`` call.
  With ``t[r, k]`` the time of rank ``r`` in iteration ``k`` (seconds):
  ``time_max_s = mean_k max_r t[r, k]`` (every iteration lasts as long as
  its slowest rank, IMB's t_max), ``time_min_s = mean_k min_r t[r, k]`` and
  ``time_avg_s = mean_k mean_r t[r, k]``.
* **Bandwidth** (nccl-tests): ``algbw = bytes / time_max_s`` and ``busbw =
  algbw * 2(p-1)/p``, in GB/s (10^9 bytes per second).
* **Check**: after every call (warm-up included) each element is compared
  with the expected sum; an element off by more than the float32 summation
  bound ``p * eps32 * sum_r |x[r, i]|`` is wrong. ``errors`` is the number of
  wrong elements summed over calls and ranks; any error fails the run.
"""
from __future__ import annotations

import os
import time

import numpy as np
from mpi4py import MPI

from . import seeds
from .comm import Comm
from .config import UsageError
from .records import BENCH_COLUMNS, CsvLog
from .sync import make_strategy
from .sync.registry import CHECKED
from .sync.ring import busbw_factor

DEFAULT_SIZES = "4K,1M,16M"
DEFAULT_STRATEGIES = "ring,ps,native"
ITEM_BYTES = 4  # float32
_TABLE = 4099  # a prime, so A and B do not line up with power-of-two sizes
EPS32 = float(np.finfo(np.float32).eps)


# ---------------------------------------------------------------------------- inputs and checks
def _tables(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = seeds.generator(seed, seeds.BENCH)
    return rng.integers(-8, 9, _TABLE), rng.integers(-3, 4, _TABLE)


class Expected:
    """One size's inputs for this rank, the exact sum over ``p`` ranks, and the tolerance."""

    def __init__(self, seed: int, rank: int, ranks: int, length: int):
        a, b = (np.resize(t.astype(np.float32), length) for t in _tables(seed))
        pairs = float(ranks * (ranks - 1) // 2)
        # Quarters of small integers: every value and every partial sum is exact in float32.
        self.inputs = (a + np.float32(rank) * b) * np.float32(0.25)
        self.sum = (np.float32(ranks) * a + np.float32(pairs) * b) * np.float32(0.25)
        abs_sum = (np.float32(ranks) * np.abs(a) + np.float32(pairs) * np.abs(b)) * np.float32(0.25)
        self.tolerance = np.float32(ranks * EPS32) * abs_sum

    def wrong(self, result: np.ndarray) -> int:
        """How many elements of ``result`` are off by more than the tolerance."""
        return int(np.count_nonzero(np.abs(result - self.sum) > self.tolerance))


# ---------------------------------------------------------------------------- measuring
def measure(comm: Comm, strategy, buf, expected: Expected, backend, calls: int):
    """Time ``calls`` reductions of ``buf``; this rank's seconds per call and its wrong elements."""
    times = np.empty(calls, dtype=np.float64)
    wrong = 0
    inputs = backend.from_host(expected.inputs)
    for k in range(calls):
        buf[...] = inputs
        backend.synchronize()
        comm.mpi.Barrier()
        start = time.perf_counter()
        strategy.reduce(buf)
        backend.synchronize()
        times[k] = time.perf_counter() - start
        wrong += expected.wrong(backend.to_host(buf))
    return times, wrong


def summarise(comm: Comm, times: np.ndarray, wrong: int) -> dict:
    """Reduce per-rank times and error counts over the ranks (see the module docstring)."""
    table = np.empty((comm.size, len(times)), dtype=np.float64)
    comm.mpi.Allgather(times, table)
    errors = comm.mpi.allreduce(wrong, op=MPI.SUM)
    return {"time_min_s": float(table.min(axis=0).mean()), "time_avg_s": float(table.mean()),
            "time_max_s": float(table.max(axis=0).mean()), "errors": int(errors)}


def bench_row(name: str, ranks: int, n_bytes: int, iterations: int, stats: dict) -> dict:
    t = stats["time_max_s"]
    algbw = n_bytes / t / 1e9 if t > 0 else 0.0
    return {"strategy": name, "ranks": ranks, "bytes": n_bytes, "iterations": iterations, **stats,
            "algbw_gbps": algbw, "busbw_gbps": algbw * busbw_factor(ranks), "tag": "measured"}


def run_bench(world: MPI.Comm, strategies, sizes_bytes, backend, out_dir: str | None,
              iterations: int = 20, warmup: int = 5, seed: int = 0, options: dict | None = None,
              append: bool = False) -> list[dict]:
    """Benchmark every strategy at every size on ``world``; rows of ``bench.csv``.

    Every rank returns the same rows; rank 0 writes them to ``out_dir/bench.csv``
    (appending when ``append``) and prints a progress line per row.
    """
    validate(strategies, sizes_bytes, iterations, warmup)
    mpi = world.Dup()
    comm = Comm(mpi, deadline_s=float((options or {}).get("deadline_s", 120.0)))
    log = None
    if out_dir is not None and comm.rank == 0:
        os.makedirs(out_dir, exist_ok=True)
        log = CsvLog(os.path.join(out_dir, "bench.csv"), BENCH_COLUMNS, append)
    rows = []
    try:
        for n_bytes in sizes_bytes:
            expected = Expected(seed, comm.rank, comm.size, n_bytes // ITEM_BYTES)
            for name in strategies:
                row = _bench_one(comm, name, n_bytes, expected, backend, iterations, warmup, options)
                rows.append(row)
                if log is not None:
                    log.write(row)
                if comm.rank == 0:
                    print(progress_line(row), flush=True)
    finally:
        if log is not None:
            log.close()
        mpi.Free()
    return rows


def _bench_one(comm, name, n_bytes, expected, backend, iterations, warmup, options) -> dict:
    length = n_bytes // ITEM_BYTES
    strategy = make_strategy(name, comm, backend, length - 1, dict(options or {}))
    buf = strategy.buffer  # [n_params + 1] elements: exactly the benchmarked size
    try:
        _, wrong_warm = measure(comm, strategy, buf, expected, backend, warmup)
        times, wrong = measure(comm, strategy, buf, expected, backend, iterations)
    finally:
        strategy.close()
    stats = summarise(comm, times, wrong + wrong_warm)
    return bench_row(name, comm.size, n_bytes, iterations, stats)


def progress_line(row: dict) -> str:
    return (f"bench {row['strategy']:<7} p={row['ranks']:<3} {human_bytes(row['bytes']):>9}  "
            f"time max {row['time_max_s'] * 1e6:11.1f} us  algbw {row['algbw_gbps']:8.3f} GB/s  "
            f"busbw {row['busbw_gbps']:8.3f} GB/s  errors {row['errors']}")


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------------------- input checks
def validate(strategies, sizes_bytes, iterations: int, warmup: int) -> None:
    """Bad benchmark input -> UsageError (one line, exit 2)."""
    from .sync import registry

    registry.validate(strategies)
    for n in sizes_bytes:
        if n < ITEM_BYTES or n % ITEM_BYTES:
            raise UsageError(f"size {n} B is not a positive multiple of {ITEM_BYTES} bytes (float32)")
    if not sizes_bytes:
        raise UsageError("--sizes needs at least one size")
    if iterations < 1 or warmup < 0:
        raise UsageError(f"--iterations must be at least 1 and --warmup at least 0 "
                         f"(got {iterations}, {warmup})")


def parse_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def bench_command(sizes_bytes, strategies_text: str, iterations: int, warmup: int, seed: int,
                  bucket_bytes: int, ps_shards: int, device: str, out: str) -> int:
    """``python -m mpibench bench``: exit 0, or 1 when any reduction was wrong."""
    strategies = parse_list(strategies_text)
    validate(strategies, sizes_bytes, iterations, warmup)
    if bucket_bytes < ITEM_BYTES:
        raise UsageError(f"--bucket-bytes must hold at least one float32 (4 bytes), got {bucket_bytes}")
    if ps_shards < 0:
        raise UsageError(f"--ps-shards must be 0 (one per rank) or positive, got {ps_shards}")
    from mpibench.kernels import select_backend

    try:
        backend = select_backend(device)
    except (RuntimeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    options = {"bucket_bytes": bucket_bytes, "ps_shards": ps_shards}
    rows = run_bench(MPI.COMM_WORLD, strategies, sizes_bytes, backend, out, iterations, warmup, seed, options)
    errors = sum(row["errors"] for row in rows)
    if errors:
        if MPI.COMM_WORLD.Get_rank() == 0:
            print(f"bench: {errors} wrong elements: a reduction gave a wrong sum", flush=True)
        return 1
    return 0


# The main job's benchmark: small sizes and few calls, so it adds seconds, not minutes.
MAIN_JOB_SIZES = (4 << 10, 64 << 10, 1 << 20)
MAIN_JOB_STRATEGIES = CHECKED + ("native",)


def main_job_bench(comm: MPI.Comm, out_dir: str, config, backend, progress=None) -> list[dict]:
    """The benchmarks at the end of the main job: rows in ``out_dir/bench.csv``."""
    if progress is not None:
        progress(f"benchmarks ({', '.join(MAIN_JOB_STRATEGIES)}; "
                 f"{', '.join(human_bytes(n) for n in MAIN_JOB_SIZES)}) ...")
    options = {"bucket_bytes": config.bucket_bytes, "ps_shards": config.ps_shards}
    rows = run_bench(comm, list(MAIN_JOB_STRATEGIES), list(MAIN_JOB_SIZES), backend, out_dir,
                     iterations=10, warmup=2, seed=config.seed, options=options)
    wrong = [f"{r['strategy']} at {human_bytes(r['bytes'])}" for r in rows if r["errors"]]
    if wrong and comm.Get_rank() == 0:
        print(f"bench: wrong sums from {', '.join(wrong)} (see bench.csv, column errors)", flush=True)
    return rows
