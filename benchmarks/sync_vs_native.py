"""Ring and parameter server against MPI's own Allreduce, side by side in one job.

    mpirun -n 4 python benchmarks/sync_vs_native.py [--sizes 4K,4M,16M,64M] [--rounds 7]

For every size the three strategies are timed in rounds; within a round each
runs ``--calls`` timed reductions right after one another (order rotated
from round to round), so all three see the same machine load. A round gives
each strategy its IMB t_max (mean over calls of the slowest rank's time, see
``mpibench.bench``). Printed per size: median times, and the **median over
rounds of the per-round ratios** (median of pairs), which is what the goals
are stated in: ring busbw / native busbw (= native time / ring time; >= 1.0
wanted at 4, 16, 64 MiB), ring time / native time at 4 KiB (<= 3 wanted) and
PS time / ring time (<= 1.3 wanted at 16 MiB).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
from mpi4py import MPI  # noqa: E402

from mpibench.bench import Expected, human_bytes, measure, parse_list  # noqa: E402
from mpibench.cli import size_option  # noqa: E402
from mpibench.comm import Comm  # noqa: E402
from mpibench.kernels import NumpyBackend  # noqa: E402
from mpibench.sync import make_strategy  # noqa: E402

NAMES = ("native", "ring", "ps")


def t_max(comm: Comm, times: np.ndarray) -> float:
    table = np.empty((comm.size, len(times)))
    comm.mpi.Allgather(times, table)
    return float(table.max(axis=0).mean())


def bench_size(comm: Comm, n_bytes: int, rounds: int, calls: int, options: dict, seed: int) -> dict:
    backend = NumpyBackend()
    length = n_bytes // 4
    expected = Expected(seed, comm.rank, comm.size, length)
    strategies = {name: make_strategy(name, comm, backend, length - 1, options) for name in NAMES}
    times = {name: [] for name in NAMES}
    errors = 0
    for name, s in strategies.items():  # warm-up: caches, plans, first-touch pages
        errors += measure(comm, s, s.buffer, expected, backend, 2)[1]
    for r in range(rounds):
        order = NAMES[r % 3:] + NAMES[:r % 3]
        for name in order:
            s = strategies[name]
            sample, wrong = measure(comm, s, s.buffer, expected, backend, calls)
            errors += wrong
            times[name].append(t_max(comm, sample))
    errors = comm.mpi.allreduce(errors)
    t = {name: np.array(v) for name, v in times.items()}
    return {"bytes": n_bytes, "errors": errors, **{f"{k}_s": float(np.median(v)) for k, v in t.items()},
            "ring_busbw_over_native": float(np.median(t["native"] / t["ring"])),
            "ring_over_native_time": float(np.median(t["ring"] / t["native"])),
            "ps_over_ring_time": float(np.median(t["ps"] / t["ring"]))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4K,4M,16M,64M")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=0, help="timed calls per round (0: by size)")
    parser.add_argument("--bucket-bytes", default="25M")
    parser.add_argument("--ps-shards", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    world = MPI.COMM_WORLD
    comm = Comm(world.Dup(), deadline_s=300)
    options = {"bucket_bytes": size_option(args.bucket_bytes), "ps_shards": args.ps_shards}
    if comm.rank == 0:
        print(f"p={comm.size}  bucket {args.bucket_bytes}  rounds {args.rounds}  (median of per-round ratios)")
        print(f"{'size':>9} {'native ms':>10} {'ring ms':>10} {'ps ms':>10} "
              f"{'ring busbw/native':>18} {'ring/native time':>17} {'ps/ring time':>13} {'errors':>7}")
    for n_bytes in (size_option(s) for s in parse_list(args.sizes)):
        calls = args.calls or max(2, min(50, (32 << 20) // n_bytes))
        row = bench_size(comm, n_bytes, args.rounds, calls, options, args.seed)
        if comm.rank == 0:
            print(f"{human_bytes(n_bytes):>9} {row['native_s'] * 1e3:10.3f} {row['ring_s'] * 1e3:10.3f} "
                  f"{row['ps_s'] * 1e3:10.3f} {row['ring_busbw_over_native']:18.2f} "
                  f"{row['ring_over_native_time']:17.2f} {row['ps_over_ring_time']:13.2f} {row['errors']:7d}",
                  flush=True)
    comm.mpi.Free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
