"""MPI-side driver: ring, PS and native on one back-end, checked in one launch.

Run as ``mpirun -n W python tests/drivers/backend_reduce.py --device cpu|gpu|emulated``.
Every case reduces seeded per-rank vectors (lengths 0, 1, p + 1, 1000 and
50 003; a small and a large bucket cap) and runs a whole ``synchronize`` step
with uneven counts, including zero-count workers, on buffers of the chosen
back-end. Each result must match the float64 sum within float32 rounding and
be bitwise identical across ranks. On ``--device gpu`` and ``emulated`` each
case is also run on the NumPy back-end, and the two must agree bit for bit: same summation
order, kernels that round like NumPy, MPI given host or staged copies of the
same values. Prints ``OK <cases>`` on rank 0; a failure aborts the job.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import traceback

import numpy as np
from mpi4py import MPI

from mpibench.base import seeds
from mpibench.sync.comm import Comm
from mpibench.kernels import NumpyBackend, select_backend
from mpibench.sync import make_strategy

EPS32 = float(np.finfo(np.float32).eps)
STRATEGIES = [("native", {}), ("ring", {"bucket_bytes": 4096}), ("ring", {"bucket_bytes": 1 << 20}),
              ("ps", {"ps_shards": 0}), ("ps", {"ps_shards": 3})]


def local_vector(length: int, worker: int) -> np.ndarray:
    if worker == 1:  # a zero-count worker contributes zeros
        return np.zeros(length, dtype=np.float32)
    return seeds.generator(length, seeds.BENCH, 77, worker).standard_normal(length).astype(np.float32)


def digest(a: np.ndarray) -> str:
    return hashlib.blake2b(a.tobytes(), digest_size=8).hexdigest()


def same_everywhere(comm: Comm, got: np.ndarray, what: str) -> None:
    digests = comm.mpi.allgather(digest(got))
    if len(set(digests)) != 1:
        raise AssertionError(f"{what}: ranks differ")


def reduce_on(backend, comm: Comm, name: str, options: dict, length: int) -> np.ndarray:
    strategy = make_strategy(name, comm, backend, max(length - 1, 0), options)
    buf = backend.zeros(length)
    local = backend.from_host(local_vector(length, comm.rank))
    for _ in range(2):  # twice: cached plans and staged buffers must serve a second call
        buf[...] = local
        strategy.reduce(buf)
    result = backend.to_host(buf)
    strategy.close()
    return result


def step_on(backend, comm: Comm, name: str, options: dict, n_params: int):
    count = [0, 5, 16, 1, 0, 9, 3, 7][comm.rank % 8]
    grad = seeds.generator(5, seeds.BENCH, 76, comm.rank).standard_normal(n_params).astype(np.float32) * count
    params = seeds.generator(5, seeds.BENCH, 75).standard_normal(n_params).astype(np.float32)
    strategy = make_strategy(name, comm, backend, n_params, options)
    strategy.synchronize(params, grad, count, 0.1)
    total = strategy.total_count()
    strategy.close()
    return params, total


def run_cases(comm: Comm, backend, twin) -> int:
    p, cases = comm.size, 0
    for length in sorted({0, 1, p + 1, 1000, 50_003}):
        want = sum(local_vector(length, r).astype(np.float64) for r in range(p))
        scale = sum(np.abs(local_vector(length, r)).astype(np.float64) for r in range(p))
        for name, options in STRATEGIES:
            if name == "native" and length == 0:
                continue  # native reduces the n_params + 1 step buffer, never an empty one
            what = f"{backend.name} p={p} {name} {options} length={length}"
            got = reduce_on(backend, comm, name, options, length)
            if np.any(np.abs(got - want) > 2 * p * EPS32 * scale + 1e-30):
                raise AssertionError(f"{what}: not the sum")
            same_everywhere(comm, got, what)
            if twin is not None and not np.array_equal(got, reduce_on(twin, comm, name, options, length)):
                raise AssertionError(f"{what}: differs from the NumPy back-end")
            cases += 1
    for n_params in (1, p + 1, 677):
        native, native_total = step_on(backend, comm, "native", {}, n_params)
        for name, options in STRATEGIES:
            what = f"{backend.name} p={p} step {name} {options} n={n_params}"
            params, total = step_on(backend, comm, name, options, n_params)
            if total != native_total or not np.allclose(params, native, rtol=4 * p * EPS32, atol=1e-6):
                raise AssertionError(f"{what}: differs from native")
            same_everywhere(comm, params, what)
            if twin is not None and not np.array_equal(params, step_on(twin, comm, name, options, n_params)[0]):
                raise AssertionError(f"{what}: differs from the NumPy back-end")
            cases += 1
    return cases


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cpu", "gpu", "emulated"], default="cpu")
    args = parser.parse_args()
    backend = select_backend(args.device)
    twin = NumpyBackend() if backend.name != "numpy" else None
    comm = Comm(MPI.COMM_WORLD.Dup(), deadline_s=60)
    cases = run_cases(comm, backend, twin)
    comm.mpi.Barrier()
    if comm.rank == 0:
        moved = dict(backend.transfer.moved)
        print(f"OK {cases} on {backend.name}, transfers {backend.info['transfer']} {moved}", flush=True)
    comm.mpi.Free()
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception:  # noqa: BLE001 - one failing rank must end the job, not hang it
        traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
    sys.exit(code)
