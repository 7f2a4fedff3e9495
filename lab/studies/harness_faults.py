"""What a check between timed calls does to a blocking ``MPI_Allreduce``, side by side in one job.

    mpirun -n 2 python lab/studies/harness_faults.py [--sizes 64K,1M,4M,16M] [--rounds 5] [--calls 50]

Three loops over the same buffers, interleaved round by round, each call timed
alone after a barrier (as ``bench`` times it):

* ``nothing``: nothing between the calls (what IMB and OSU do);
* ``check, allocating``: the result compared with the expected sum through NumPy
  temporaries of the buffer's size (what ``bench`` did before);
* ``check, in place``: the same comparison into scratch allocated once;
* ``bench's blocking row``: the harness's own candidate
  (:class:`mpibench.job.bench.candidates.BlockingAllreduce`, checked after the
  batch), so its time over ``nothing``'s says what the harness still costs.

Beside each time: the minor page faults taken inside the timed call
(``getrusage``). Freed temporaries of the buffer's size let glibc trim its heap,
so the scratch buffer Open MPI allocates inside ``MPI_Allreduce`` lands on fresh
pages and faults every call; run with ``-x MALLOC_TRIM_THRESHOLD_=4000000000
-x MALLOC_MMAP_THRESHOLD_=4000000000`` and the faults vanish. What is left of the
gap for the in-place check is the caches: it reads two more buffers of the size.
Printed per size: medians over rounds of the slowest rank's mean call time,
faults per call, and each loop's time over ``nothing``'s in the same round.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np
from mpi4py import MPI

from mpibench.base.parsing import parse_list, parse_size
from mpibench.base.units import human_bytes
from mpibench.job.bench.candidates import BlockingAllreduce
from mpibench.job.bench.inputs import Expected


def allocating_check(expected: Expected, buf: np.ndarray) -> int:
    return int(np.count_nonzero(np.abs(buf - expected.sum) > expected.tolerance))


LOOPS = {"nothing": None, "check, allocating": allocating_check,
         "check, in place": lambda expected, buf: expected.wrong(buf), "bench's blocking row": "bench"}


_ROWS: dict = {}  # one harness candidate per size, warmed up with the rest (as bench keeps it)


def bench_round(mpi: MPI.Comm, expected: Expected, calls: int) -> tuple[float, float]:
    row = _ROWS.setdefault(id(expected), BlockingAllreduce(mpi, expected, in_place=False))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    timed = row.time_calls(calls)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before  # the whole batch, check included
    return mpi.allreduce(float(timed.times_s.mean()), op=MPI.MAX), mpi.allreduce(faults / calls, op=MPI.MAX)


def one_round(mpi: MPI.Comm, expected: Expected, buf: np.ndarray, calls: int, check) -> tuple[float, float]:
    """(slowest rank's mean call time, most faults per call on a rank)."""
    if check == "bench":
        return bench_round(mpi, expected, calls)
    times, faults = np.empty(calls), 0
    for k in range(calls):
        mpi.Barrier()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        mpi.Allreduce(expected.inputs, buf, op=MPI.SUM)
        times[k] = time.perf_counter() - start
        faults += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        if check is not None:
            check(expected, buf)
    return mpi.allreduce(float(times.mean()), op=MPI.MAX), mpi.allreduce(faults / calls, op=MPI.MAX)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64K,1M,4M,16M")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    mpi = MPI.COMM_WORLD.Dup()
    if mpi.Get_rank() == 0:
        print(f"p={mpi.Get_size()}  {args.rounds} rounds x {args.calls} calls  float32 sum, out of place\n"
              f"{'size':>8} {'loop':<22} {'us/call':>9} {'faults/call':>11} {'x nothing':>9}")
    for n_bytes in (parse_size(s) for s in parse_list(args.sizes, "--sizes")):
        expected = Expected(0, mpi.Get_rank(), mpi.Get_size(), n_bytes // 4)
        buf = np.empty_like(expected.inputs)
        one_round(mpi, expected, buf, 5, None)  # warm-up
        bench_round(mpi, expected, 5)
        got = {name: [] for name in LOOPS}
        for r in range(args.rounds):
            names = list(LOOPS)[r % len(LOOPS):] + list(LOOPS)[:r % len(LOOPS)]
            for name in names:
                got[name].append(one_round(mpi, expected, buf, args.calls, LOOPS[name]))
        if mpi.Get_rank() == 0:
            base = np.array([t for t, _ in got["nothing"]])
            for name, pairs in got.items():
                t, f = (np.array(v) for v in zip(*pairs))
                print(f"{human_bytes(n_bytes):>8} {name:<22} {np.median(t) * 1e6:9.1f} {np.median(f):11.1f} "
                      f"{np.median(t / base):9.2f}", flush=True)
    mpi.Free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
