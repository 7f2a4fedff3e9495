"""The rooted and scattering collectives of mpibench's Comm, as one program for either library.

``python comm_collectives.py`` under ``mpirun -n 3`` runs it on the real library; with ``--sim``
on three simulated processes. Rank r contributes ``arange(n) * (r + 1) + r`` (float64) for every
size n in SIZES, and prints ``RANK r {json}``: what each call left in its buffers.
"""
import json
import sys

import numpy as np

SIZES = (0, 1, 2, 7)  # 2: fewer elements than ranks
SIMULATED = "--sim" in sys.argv


def mine(rank: int, n: int) -> np.ndarray:
    return np.arange(n, dtype=np.float64) * (rank + 1) + rank


def counts_of(n: int, p: int) -> list[int]:
    return [n // p + (1 if i < n % p else 0) for i in range(p)]


def seen(MPI) -> dict:
    from mpibench.sync.comm import Comm

    comm = Comm(MPI.COMM_WORLD, deadline_s=30.0)
    r, p, out = comm.rank, comm.size, {}
    for n in SIZES:
        total = np.full(n, -1.0)
        comm.reduce(mine(r, n), total if r == 1 else None, root=1)
        top = np.full(n, -1.0)
        comm.reduce(mine(r, n), top, root=0, op="max")  # a buffer off the root stays as it was
        part = np.full(counts_of(n, p)[r], -1.0)
        comm.reduce_scatter(mine(r, n), part, counts_of(n, p))
        block = np.full(n, -1.0)
        comm.scatter(np.arange(n * p, dtype=np.float64) if r == 2 else None, block, root=2)
        gathered = np.full(n * p, -1.0)
        comm.gather(mine(r, n), gathered if r == 0 else None, root=0)
        out[str(n)] = {"reduce": total.tolist(), "reduce_max": top.tolist(), "reduce_scatter": part.tolist(),
                       "scatter": block.tolist(), "gather": gathered.tolist()}
    return out


def report(MPI) -> int:
    print(f"RANK {MPI.COMM_WORLD.Get_rank()} {json.dumps(seen(MPI))}", flush=True)
    return 0


def main() -> int:
    if SIMULATED:
        from mpibench.sim.process import run_world

        result = run_world(3, lambda: report(__import__("mpi4py").MPI), wall_limit_s=60)
        print(f"CODES {json.dumps(result.codes)}", flush=True)
        return 0
    from mpi4py import MPI
    return report(MPI)


if __name__ == "__main__":
    sys.exit(main())
