"""Runs training with a known-bad reduction: the plain mean of per-worker means.

Launched under mpirun by tests/test_checker_bites.py; writes the usual CSVs and
the history (run.json, case.json, one file per worker) that ``check`` judges.
"""
import sys

import numpy as np
from mpi4py import MPI

from mpibench.sync.comm import Comm
from mpibench.base.config import RunConfig
from mpibench.engine.data import make_dataset, make_shards
from mpibench.job.continuation import SingleRun
from mpibench.kernels import NumpyBackend
from mpibench.base import runinfo
from mpibench.faults import load_schedule
from mpibench.engine.history import case_id
from mpibench.base.records import RunRecords
from mpibench.job.runner import open_history, recoverable_dup, write_case_json
from mpibench.sync.base import Reduction, SyncStrategy
from mpibench.engine.worker import Trainer


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
    case = SingleRun(out_dir)
    if world.Get_rank() == 0:
        runinfo.write(out_dir, {"cases": [case_id(0, config.scenario, config.strategy, config.recovery)]})
        write_case_json(config, load_schedule("none", world.Get_size(), config.seed), case, world.Get_size())
    comm = Comm(recoverable_dup(world))
    trainer = Trainer(config, comm, NumpyBackend(), dataset, shards, records, world.Get_size(),
                      strategy_factory=lambda name, *a: MeanOfMeans(*a),
                      history=open_history(config, case, world.Get_rank()))
    trainer.run()
    trainer.close_history()
    records.close()


if __name__ == "__main__":
    main(sys.argv[1])
