"""Every all-reduce strategy against the plain blocking ``MPI_Allreduce``, side by side in one job.

    mpirun -n 2 python lab/studies/strategies_vs_allreduce.py [--sizes 4K,...,64M] [--rounds 7]

The baseline is what a user would call: ``comm.Allreduce(send, recv, SUM)``
on float32 buffers (mpi4py's buffer call, blocking). Each strategy reduces
its own step buffer through the suite's deadline-bounded communicator. For
every size the contenders are timed in rounds; within a round each runs
``--calls`` reductions right after one another (order rotated from round to
round), so all see the same machine load; a round gives each the median over
its calls of the slowest rank's time. Printed per size: the median
time of each, the median over rounds of each one's time / the baseline's, and
for ``auto`` the median of auto / the best fixed strategy of that size (the
one with the lowest median), plus which algorithm auto picked (by timing its
candidates, as in training). Alpha, beta and gamma, measured once at the start
(ping-pong and a timed add), give the modelled time per strategy, printed as
modelled / measured.

Beside them, ``plain_ring`` (``lab/studies/plain_ring.py``): a ring in plain
mpi4py ``Sendrecv`` calls, the same data over the same transport with none of
the suite's layers; ``ring/plain`` is what those layers cost, ``plain/floor``
what the MPI's transport costs beyond memory copies. And the data-movement floor (``mpibench.job.bench.floor``): the copies
and adds a reduce-scatter + all-gather must make, in NumPy on every rank at
once, no MPI, timed in the same rounds; ``ring/floor`` is how close the ring
gets to it.

The goals this checks at p = 2, printed at the end as met or not with the
figure: auto at most 1.6x the baseline at 4 KiB and 1.3x at 16 KiB, never
more than 10 % slower than the best fixed strategy; ring within 1.3x of the
floor from 1 MiB to 64 MiB. Ratios are measured under whatever load the
machine has (the load average is printed); with more ranks than cores (p = 4
on 2 cores) they mostly measure the scheduler.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
from mpi4py import MPI  # noqa: E402

from mpibench.base.units import human_bytes  # noqa: E402
from mpibench.base.parsing import parse_list, parse_size  # noqa: E402
from mpibench.sync.comm import Comm  # noqa: E402
from mpibench.sync.registry import strategy_options  # noqa: E402
from mpibench.kernels import NumpyBackend  # noqa: E402
from mpibench.results import costmodel  # noqa: E402
from mpibench.sync import make_strategy  # noqa: E402
from mpibench.job.calibrate import calibrate_collectives  # noqa: E402
from mpibench.job.bench.floor import MovementFloor  # noqa: E402
from plain_ring import PlainRing  # noqa: E402  (beside this script)

FIXED = ("rd", "rabenseifner", "ring", "hier")
BASELINE = "Allreduce"


class Baseline:
    """The blocking MPI_Allreduce a user would call, on its own send and receive buffers."""

    def __init__(self, mpi_comm, length: int):
        self.mpi, self.buffer, self.out = mpi_comm, np.zeros(length, np.float32), np.empty(length, np.float32)

    def reduce(self, buf):
        self.mpi.Allreduce(buf, self.out, op=MPI.SUM)


class Floor:
    """The data-movement floor behind the same interface (nothing is reduced across ranks)."""

    def __init__(self, mpi_comm, length: int):
        self.floor = MovementFloor(mpi_comm, length)
        self.buffer = self.floor.own

    def reduce(self, buf):
        self.floor.once()


def timed(comm: Comm, reducer, values: np.ndarray, calls: int) -> float:
    """Median over calls of the slowest rank's time for one reduction (IMB's t_max takes the
    mean; on a shared machine a few descheduled calls would dominate it)."""
    times = np.empty(calls)
    buf = reducer.buffer
    for i in range(calls):
        buf[:] = values
        comm.mpi.Barrier()
        start = MPI.Wtime()
        reducer.reduce(buf)
        times[i] = MPI.Wtime() - start
    table = np.empty((comm.size, calls))
    comm.mpi.Allgather(times, table)
    return float(np.median(table.max(axis=0)))


def check(comm: Comm, reducer, values: np.ndarray, want: np.ndarray, name: str) -> int:
    reducer.buffer[:] = values
    reducer.reduce(reducer.buffer)
    got = reducer.out if isinstance(reducer, Baseline) else reducer.buffer
    wrong = int((np.abs(got - want) > 1e-3 * (np.abs(want) + 1)).sum())
    return comm.mpi.allreduce(wrong)


def bench_size(comm: Comm, n_bytes: int, rounds: int, calls: int, options: dict) -> dict:
    backend, length = NumpyBackend(), n_bytes // 4
    rng = np.random.default_rng([n_bytes, comm.rank])
    values = rng.standard_normal(length).astype(np.float32)
    want = np.empty_like(values)
    comm.mpi.Allreduce(values, want, op=MPI.SUM)
    reducers = {BASELINE: Baseline(comm.mpi, length)}
    reducers.update({name: make_strategy(name, comm, backend, length - 1, options) for name in FIXED + ("auto",)})
    reducers["floor"] = Floor(comm.mpi, length)
    reducers["plain_ring"] = PlainRing(comm.mpi, length)
    names = list(reducers)
    errors = sum(check(comm, r, values, want, n) for n, r in reducers.items() if n != "floor")  # also warms up
    reducers["floor"].reduce(None)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(timed(comm, reducers[name], values, calls))
    t = {name: np.array(v) for name, v in times.items()}
    best = min(FIXED, key=lambda name: np.median(t[name]))
    auto = reducers["auto"]
    row = {"bytes": n_bytes, "errors": errors, "best": best, "auto_pick": auto.plan_for(auto.buffer).label,
           **{f"{k}_s": float(np.median(v)) for k, v in t.items()},
           **{f"{k}_ratio": float(np.median(v / t[BASELINE])) for k, v in t.items() if k != BASELINE},
           "auto_over_best": float(np.median(t["auto"] / t[best])),
           "ring_over_floor": float(np.median(t["ring"] / t["floor"])),
           "ring_over_plain": float(np.median(t["ring"] / t["plain_ring"])),
           "plain_over_floor": float(np.median(t["plain_ring"] / t["floor"]))}
    for reducer in reducers.values():
        if hasattr(reducer, "close"):
            reducer.close()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4K,16K,64K,256K,1M,4M,16M,64M")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=0, help="timed calls per round (0: by size)")
    parser.add_argument("--bucket-bytes", default="25M")
    args = parser.parse_args()
    comm = Comm(MPI.COMM_WORLD.Dup(), deadline_s=300)
    costs = calibrate_collectives(comm.mpi)  # the suite's own ping-pong and reduction figures
    # auto chooses as it does in training (timing its candidates); costs only give the model column
    options = strategy_options(parse_size(args.bucket_bytes), 0)
    cores = os.cpu_count() or 1
    if comm.rank == 0:
        note = f"  OVERSUBSCRIBED: {comm.size} ranks on {cores} cores" if comm.size > cores else ""
        print(f"p={comm.size}  bucket {args.bucket_bytes}  rounds {args.rounds}  baseline: blocking "
              f"MPI_Allreduce{note}\ncalibration: alpha {costs.alpha_s * 1e6:.2f} us, beta "
              f"{costs.beta_s_per_byte * 1e9:.3f} ns/B, gamma {costs.gamma_cache_s_per_byte * 1e9:.3f} ns/B")
        print(f"{'size':>9} {'Allreduce ms':>12} " + " ".join(f"{n + '/base':>13}" for n in FIXED + ('auto',))
              + f" {'auto/best':>10} {'ring/floor':>10} {'ring/plain':>10} {'plain/floor':>11} {'best':>13} {'auto picked':>18} {'errors':>6}   model/measured: "
              + " ".join(FIXED + ("auto",)))
    rows = []
    for n_bytes in (parse_size(s) for s in parse_list(args.sizes, "--sizes")):
        calls = args.calls or max(3, min(200, (16 << 20) // n_bytes))
        row = bench_size(comm, n_bytes, args.rounds, calls, options)
        rows.append(row)
        if comm.rank == 0:
            modelled = [costmodel.sync_s(costs, n, comm.size, n_bytes, options) / row[f"{n}_s"]
                        for n in FIXED + ("auto",)]
            print(f"{human_bytes(n_bytes):>9} {row[BASELINE + '_s'] * 1e3:12.3f} "
                  + " ".join(f"{row[n + '_ratio']:13.2f}" for n in FIXED + ("auto",))
                  + f" {row['auto_over_best']:10.2f} {row['ring_over_floor']:10.2f} {row['ring_over_plain']:10.2f} "
                  f"{row['plain_over_floor']:11.2f} {row['best']:>13} "
                  f"{row['auto_pick']:>18} {row['errors']:6d}   "
                  + " ".join(f"{m:.2f}" for m in modelled), flush=True)
    if comm.rank == 0:
        for line in goal_lines(rows):
            print(line)
    comm.mpi.Free()
    return 0


def goal_lines(rows: list[dict]) -> list[str]:
    """Each goal at the sizes measured: met or not, with the figure (none measured: said so)."""
    goals = [("auto_ratio", 4 << 10, 4 << 10, 1.6, "auto / blocking"),
             ("auto_ratio", 16 << 10, 16 << 10, 1.3, "auto / blocking"),
             ("ring_over_floor", 1 << 20, 64 << 20, 1.3, "ring / floor"),
             ("ring_over_plain", 1 << 20, 64 << 20, 1.3, "ring / plain mpi4py ring (the same transport)")]
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "unknown"
    lines = [f"# goals (load average {load}):"]
    for key, low, high, limit, what in goals:
        got = [(r["bytes"], r[key]) for r in rows if low <= r["bytes"] <= high]
        if not got:
            lines.append(f"#   {what} <= {limit} at {human_bytes(low)}..{human_bytes(high)}: not measured")
            continue
        worst = max(got, key=lambda g: g[1])
        lines.append(f"#   {what} <= {limit} at {human_bytes(low)}..{human_bytes(high)}: "
                     f"{'met' if worst[1] <= limit else 'NOT met'} (worst {worst[1]:.2f} at {human_bytes(worst[0])})")
    return lines


if __name__ == "__main__":
    sys.exit(main())
