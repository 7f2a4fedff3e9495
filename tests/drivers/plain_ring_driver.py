"""Under mpirun: the benchmarks' plain ring against NumPy's sum, for the lengths given."""
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lab" / "studies"))
from plain_ring import PlainRing  # noqa: E402

comm = MPI.COMM_WORLD
for length in (int(a) for a in sys.argv[1:]):
    ring = PlainRing(comm, length)
    mine = np.random.default_rng([length, comm.rank]).standard_normal(length).astype(np.float32)
    everyone = np.array([np.random.default_rng([length, r]).standard_normal(length).astype(np.float32)
                         for r in range(comm.size)]).reshape(comm.size, length)
    ring.buffer[:] = mine
    ring.reduce(ring.buffer)
    worst = float(np.max(np.abs(ring.buffer - everyone.astype(np.float64).sum(axis=0)), initial=0.0))
    print(f"rank {comm.rank} length {length} worst {worst:.3g}", flush=True)
    assert worst <= 1e-5 * comm.size, (length, worst)
