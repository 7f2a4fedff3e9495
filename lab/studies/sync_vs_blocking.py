"""Every strategy against the blocking MPI_Allreduce, side by side in one job.

    mpirun -n 4 python lab/studies/sync_vs_blocking.py [--ranks 2,4] [--sizes 4K,64K,1M,16M,64M]
        [--rounds 5] [--bucket-bytes 25M]

One job measures every rank count in ``--ranks`` (up to the job's size) on a
sub-communicator of the first p ranks while the others sleep. At each size
the candidates (blocking ``Comm.Allreduce`` from mpi4py, the C loop of
``MPI_Allreduce`` when it builds, and every registered strategy) run in
interleaved rounds (``mpibench.job.bench.rounds``); every ratio printed is the
**median over rounds of the per-round ratio**, so both halves of a ratio saw
the same machine load. Columns, per strategy: ``x blk`` = its busbw over the
blocking call's (= blocking time / its time; > 1 is faster); then
``ps/ring`` = PS time over ring time, and ``py/C`` = blocking mpi4py time over
the C loop's (the Python overhead of the plain call). Goals checked at p = 2:
ring >= 0.9x blocking busbw at >= 1 MiB, PS <= 1.3x ring time. Rank counts
above the host's cores are marked oversubscribed: their figures are not
results.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from mpibench.job.bench import BenchPlan, human_bytes  # noqa: E402
from mpibench.job.bench import cfloor  # noqa: E402
from mpibench.job.bench.plan import registered  # noqa: E402
from mpibench.job.bench.rounds import ratio_to  # noqa: E402
from mpibench.job.bench.run import measure_size  # noqa: E402
from mpibench.base.parsing import parse_size  # noqa: E402
from mpibench.sync.comm import Comm  # noqa: E402
from mpibench.sync.registry import strategy_options  # noqa: E402
from mpibench.kernels import NumpyBackend  # noqa: E402
from mpibench.job.timing import cores_available, idle_until_released  # noqa: E402

RING_GOAL, PS_GOAL, RING_GOAL_FROM = 0.9, 1.3, 1 << 20


def calls_for(n_bytes: int) -> int:
    return max(3, min(50, (32 << 20) // n_bytes))


def measure_p(world: MPI.Comm, p: int, args, strategies) -> list[dict] | None:
    """All sizes on the first p ranks; rank 0 gets the rows, the others None."""
    rank = world.Get_rank()
    sub = world.Split(0 if rank < p else MPI.UNDEFINED, rank)
    rows = None
    if sub != MPI.COMM_NULL:
        comm = Comm(sub, deadline_s=300)
        floor, where = cfloor.load(sub)
        if rank == 0 and floor is None:
            print(f"# C floor left out: {where}", flush=True)
        rows = []
        for n_bytes in (parse_size(s) for s in args.sizes.split(",")):
            plan = BenchPlan(strategies=strategies, sizes_bytes=(n_bytes,), warmup=2,
                             iterations=calls_for(n_bytes), rounds=args.rounds, seed=args.seed, model=False,
                             options=strategy_options(parse_size(args.bucket_bytes), 0))
            _, spreads, _ = measure_size(comm, plan, floor, NumpyBackend(), n_bytes)
            rows.append(_row(p, n_bytes, spreads))
            if rank == 0:
                print(line(rows[-1], strategies), flush=True)
        sub.Free()
    idle_until_released(world)
    return rows if rank == 0 else None


def _row(p: int, n_bytes: int, spreads: dict) -> dict:
    base = spreads["blocking"]
    row = {"p": p, "bytes": n_bytes, "blocking_s": base.time_max_s,
           "errors": sum(s.errors for s in spreads.values())}
    for name, s in spreads.items():
        row[f"{name}_s"] = s.time_max_s
        row[f"{name}_x"] = ratio_to(base, s)
    if "ring" in spreads and "ps" in spreads:
        row["ps_over_ring"] = ratio_to(spreads["ps"], spreads["ring"])  # ring/ps per round -> invert below
        row["ps_over_ring"] = 1 / row["ps_over_ring"] if row["ps_over_ring"] else None
    if "c_floor" in spreads:
        row["py_over_c"] = ratio_to(spreads["c_floor"], base)
        row["py_over_c"] = 1 / row["py_over_c"] if row["py_over_c"] else None
    return row


def header(strategies, oversubscribed: bool, p: int) -> str:
    note = "  OVERSUBSCRIBED: more ranks than cores, not a result" if oversubscribed else ""
    cols = "".join(f" {n + ' us':>11} {'x blk':>6}" for n in ("c_floor", *strategies))
    return (f"# p={p}{note}\n{'size':>9} {'blocking us':>12}{cols} {'ps/ring':>8} {'py/C':>6} {'wrong':>6}")


def _fmt(value, spec: str, width: int) -> str:
    return f"{value:{spec}}" if value is not None and np.isfinite(value) else f"{'-':>{width}}"


def line(row: dict, strategies) -> str:
    cells = "".join(f" {_fmt(row.get(f'{n}_s', None) and row[f'{n}_s'] * 1e6, '11.1f', 11)}"
                    f" {_fmt(row.get(f'{n}_x'), '6.2f', 6)}" for n in ("c_floor", *strategies))
    return (f"{human_bytes(row['bytes']):>9} {row['blocking_s'] * 1e6:12.1f}{cells} "
            f"{_fmt(row.get('ps_over_ring'), '8.2f', 8)} {_fmt(row.get('py_over_c'), '6.2f', 6)} {row['errors']:6d}")


def goals(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        if r["p"] != 2:
            continue
        if r["bytes"] >= RING_GOAL_FROM and r.get("ring_x") is not None:
            ok = r["ring_x"] >= RING_GOAL
            out.append(f"goal p=2 {human_bytes(r['bytes'])}: ring busbw {r['ring_x']:.2f}x blocking "
                       f"(>= {RING_GOAL}) {'met' if ok else 'MISSED'}")
        if r.get("ps_over_ring") is not None:
            ok = r["ps_over_ring"] <= PS_GOAL
            out.append(f"goal p=2 {human_bytes(r['bytes'])}: PS time {r['ps_over_ring']:.2f}x ring "
                       f"(<= {PS_GOAL}) {'met' if ok else 'MISSED'}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--sizes", default="4K,64K,1M,16M,64M")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bucket-bytes", default="25M")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    world = MPI.COMM_WORLD
    strategies = tuple(registered())
    counts = [int(c) for c in args.ranks.split(",") if int(c) <= world.Get_size()]
    cores = cores_available()
    all_rows = []
    for p in counts:
        if world.Get_rank() == 0:
            print(header(strategies, p > cores, p), flush=True)
        rows = measure_p(world, p, args, strategies)
        all_rows += rows or []
    if world.Get_rank() == 0:
        print(f"# medians over {args.rounds} interleaved rounds of per-round ratios; {cores} cores here")
        for text in goals(all_rows):
            print(text)
        wrong = sum(r["errors"] for r in all_rows)
        print(f"# wrong elements: {wrong}")
        return 1 if wrong else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
