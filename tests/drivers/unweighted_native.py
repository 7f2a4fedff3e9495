"""Runs training with a known-bad reduction: the plain mean of per-worker means.

Launched under mpirun by tests/test_checker_bites.py; writes the usual CSVs.
"""
import sys

import numpy as np
from mpi4py import MPI

from mpibench.comm import Comm
from mpibench.config import RunConfig
from mpibench.data import make_dataset, make_shards
from mpibench.kernels import NumpyBackend
from mpibench.records import RunRecords
from mpibench.runner import recoverable_dup
from mpibench.sync.base import Reduction, SyncStrategy
from mpibench.worker import Trainer


class MeanOfMeans(SyncStrategy):
    """Averages each worker's mean gradient with equal weight (wrong for uneven batches)."""

    name = "native"

    def synchronize(self, params, grad_sum, count, lr):
        local = np.zeros(self.n_params + 1, dtype=np.float32)
        if count:
            local[:-1] = grad_sum / count
        local[-1] = count
        total = np.empty_like(local)
        self.comm.allreduce(local, total)
        params -= np.float32(lr) * total[:-1] / np.float32(self.comm.size)
        self.buffer[-1] = total[-1]
        return Reduction(self.comm.worker_ids, [(0, len(local))], len(local))

    def reduce(self, buf):
        raise NotImplementedError


def main(out_dir: str) -> None:
    world = MPI.COMM_WORLD
    config = RunConfig(steps=12, samples=100, batch_size=8)
    dataset = make_dataset(config.seed, config.samples, config.features, config.classes)
    shards = make_shards(config.seed, config.samples, world.Get_size())
    records = RunRecords(out_dir if world.Get_rank() == 0 else None)
    comm = Comm(recoverable_dup(world))
    trainer = Trainer(config, comm, NumpyBackend(), dataset, shards, records, world.Get_size(),
                      strategy_factory=lambda name, *a: MeanOfMeans(*a))
    trainer.run()
    records.close()


if __name__ == "__main__":
    main(sys.argv[1])
