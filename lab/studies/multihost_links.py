"""Intra-host versus inter-host links in one job (run under mpirun across testbed hosts).

Needs at least 2 hosts with 2 ranks each (ranks filled host by host). In one
run it measures, for the link inside a host (ranks 0 and 1: shared memory) and
the link between hosts (ranks 0 and ``ranks_per_host``: TCP over the bridge):

* ping-pong half round trips at 8 B .. 4 MiB (median over ``rounds``, argv[2]), fitted to ``t = alpha + n beta``
  with the project's own fit (:func:`mpibench.job.calibrate.fit_alpha_beta`);
* blocking ``MPI_Allreduce`` (float32 sum) over a 2-rank communicator on each
  link, as bus bandwidth (busbw = algbw x 2(p-1)/p, which is algbw at p = 2).

The two links are measured alternately, size by size, so that load from other
processes on the machine falls on both. Prints one JSON object on rank 0.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time

import numpy as np
from mpi4py import MPI

from mpibench.job.timing import fit_alpha_beta

PING_BYTES = (8, 1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20)
ALLREDUCE_BYTES = (64 << 10, 1 << 20, 16 << 20)


def repeats(nbytes: int) -> int:
    return 100 if nbytes <= 16 << 10 else 20 if nbytes <= 1 << 20 else 8


def ping_pong(comm: MPI.Comm, nbytes: int) -> float:
    """Median half round trip between ranks 0 and 1 of ``comm``."""
    buf = np.zeros(max(nbytes // 4, 1), dtype=np.float32)
    times = []
    for i in range(-10, repeats(nbytes)):  # the first rounds open the TCP connection
        comm.Barrier()
        start = time.perf_counter()
        if comm.Get_rank() == 0:
            comm.Send(buf, 1)
            comm.Recv(buf, 1)
        else:
            comm.Recv(buf, 0)
            comm.Send(buf, 0)
        if i >= 0:
            times.append((time.perf_counter() - start) / 2)
    return float(np.median(times))


def allreduce_busbw_gbps(comm: MPI.Comm, nbytes: int) -> tuple[float, float]:
    """(median seconds, busbw in GB/s) of a blocking Allreduce of ``nbytes``."""
    send = np.ones(nbytes // 4, dtype=np.float32)
    recv = np.empty_like(send)
    times = []
    for i in range(-2, repeats(nbytes)):
        comm.Barrier()
        start = time.perf_counter()
        comm.Allreduce(send, recv, op=MPI.SUM)
        if i >= 0:
            times.append(time.perf_counter() - start)
    if not np.all(recv == comm.Get_size()):
        raise SystemExit(f"Allreduce returned a wrong sum on {socket.gethostname()}")
    p = comm.Get_size()
    median_s = float(np.median(times))
    return median_s, nbytes / median_s / 1e9 * 2 * (p - 1) / p


def main() -> None:
    world = MPI.COMM_WORLD
    per_host = int(sys.argv[1])
    rank = world.Get_rank()
    if per_host < 2 or world.Get_size() < 2 * per_host:
        raise SystemExit("needs at least 2 hosts with 2 ranks each")
    # The two pairs: 0-1 on one host, 0-per_host across hosts. Every other rank idles.
    intra = world.Split(0 if rank in (0, 1) else MPI.UNDEFINED, rank)
    inter = world.Split(0 if rank in (0, per_host) else MPI.UNDEFINED, rank)
    hosts = world.gather(socket.gethostname(), root=0)
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    raw = {name: {"ping": {}, "allreduce": {}} for name in ("intra", "inter")}
    # Rank 0 is in both pairs, so the links take turns size by size, round after round;
    # ranks in neither pair sleep instead of spinning on the shared cores.
    for _ in range(rounds):
        for nbytes in PING_BYTES:
            for name, comm in (("intra", intra), ("inter", inter)):
                if comm != MPI.COMM_NULL:
                    raw[name]["ping"].setdefault(nbytes, []).append(ping_pong(comm, nbytes))
        for nbytes in ALLREDUCE_BYTES:
            for name, comm in (("intra", intra), ("inter", inter)):
                if comm != MPI.COMM_NULL:
                    raw[name]["allreduce"].setdefault(nbytes, []).append(allreduce_busbw_gbps(comm, nbytes))
    links = {name: {"ping": [(n, float(np.median(ts))) for n, ts in data["ping"].items()],
                    "allreduce": [(n, float(np.median([t for t, _ in runs])),
                                   float(np.median([bw for _, bw in runs])),
                                   [bw for _, bw in runs]) for n, runs in data["allreduce"].items()]}
             for name, data in raw.items()}
    done = world.Ibarrier()
    while not done.Test():
        time.sleep(0.005)
    if rank == 0:  # rank 0 is in both pairs and holds both links' figures
        report = {"hosts": sorted(set(hosts)), "ranks": world.Get_size(), "rounds": rounds,
                  "cores": len(os.sched_getaffinity(0)),
                  "pairs": {"intra": [hosts[0], hosts[1]], "inter": [hosts[0], hosts[per_host]]}}
        for name, data in links.items():
            alpha, beta = fit_alpha_beta(data["ping"])
            report[name] = {"alpha_s": alpha, "beta_s_per_byte": beta,
                            "bandwidth_gbps": (1 / beta / 1e9) if beta > 0 else None,
                            "ping_pong_s": data["ping"],
                            "allreduce": [{"bytes": n, "time_s": t, "busbw_gbps": bw,
                                           "busbw_gbps_per_round": rounds_bw}
                                          for n, t, bw, rounds_bw in data["allreduce"]]}
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
