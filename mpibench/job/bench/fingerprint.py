"""A launch's fingerprint: three short fixed measurements taken before anything else.

On a shared host a whole launch can land in a state several-fold slower than
the next (where its buffers and ranks landed, what else runs). The fingerprint
names that state so launches can be clustered and their figures read state by
state: a 1 MiB ping-pong between ranks 0 and 1 (the link), a 16 MiB ``memcpy``
(memory bandwidth) and a 4 MiB float32 in-place add (the reduction's compute),
each the median of a fixed number of repetitions, in about a tenth of a second.
Rank 0 writes ``fingerprint.csv`` (one row) beside ``bench.csv``.
"""
from __future__ import annotations

import csv
import os
import time
from dataclasses import asdict, dataclass

import numpy as np
from mpi4py import MPI
from mpibench.base import stats


PINGPONG_BYTES = 1 << 20
COPY_BYTES = 16 << 20
ADD_BYTES = 4 << 20
REPEATS = 15
FILE = "fingerprint.csv"


@dataclass(frozen=True)
class Fingerprint:
    pingpong_1mib_s: float  # one-way time (half the round trip); 0 on one rank
    memcpy_gbps: float  # 1e9 bytes per second
    add_gbps: float  # bytes of the summand per second
    ranks: int
    load_1min: float  # the host's load average when the launch began


def _median_s(run, repeats: int = REPEATS) -> float:
    times = np.empty(repeats)
    for i in range(repeats):
        start = time.perf_counter()
        run()
        times[i] = time.perf_counter() - start
    return stats.median(times)


def _pingpong_s(mpi: MPI.Comm) -> float:
    if mpi.Get_size() < 2:
        return 0.0
    buf = np.zeros(PINGPONG_BYTES, dtype=np.uint8)
    rank = mpi.Get_rank()

    def trip():
        if rank == 0:
            mpi.Send(buf, dest=1, tag=7)
            mpi.Recv(buf, source=1, tag=7)
        elif rank == 1:
            mpi.Recv(buf, source=0, tag=7)
            mpi.Send(buf, dest=0, tag=7)

    trip()  # connect and fault the pages in, untimed
    mpi.Barrier()
    trip_s = _median_s(trip) if rank <= 1 else 0.0
    return float(mpi.bcast(trip_s / 2, root=0))


def measure(mpi: MPI.Comm) -> Fingerprint:
    """The fingerprint of this launch (collective over ``mpi``; every rank gets rank 0's)."""
    mpi.Barrier()
    pingpong = _pingpong_s(mpi)
    src, dst = np.ones(COPY_BYTES, dtype=np.uint8), np.zeros(COPY_BYTES, dtype=np.uint8)
    np.copyto(dst, src)
    copy_s = _median_s(lambda: np.copyto(dst, src))
    a, b = np.ones(ADD_BYTES // 4, dtype=np.float32), np.ones(ADD_BYTES // 4, dtype=np.float32)
    np.add(a, b, out=a)
    add_s = _median_s(lambda: np.add(a, b, out=a))
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    mine = Fingerprint(pingpong, COPY_BYTES / copy_s / 1e9, ADD_BYTES / add_s / 1e9, mpi.Get_size(), load)
    mpi.Barrier()
    return mpi.bcast(mine, root=0)


def record(mpi: MPI.Comm, out_dir: str | None) -> Fingerprint:
    """Measure, print one line and (rank 0, with a folder) write ``fingerprint.csv``."""
    got = measure(mpi)
    if mpi.Get_rank() == 0:
        print(f"# fingerprint: ping-pong 1 MiB {got.pingpong_1mib_s * 1e6:.0f} us one way, memcpy "
              f"{got.memcpy_gbps:.1f} GB/s, add {got.add_gbps:.1f} GB/s, load {got.load_1min:.2f}", flush=True)
        if out_dir is not None:
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, FILE), "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(asdict(got)))
                writer.writeheader()
                writer.writerow(asdict(got))
    return got
