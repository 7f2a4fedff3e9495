"""A deliberately wrong third-party strategy: the plain mean of the workers' mean gradients.

It reduces correctly (MPI's Allreduce of the buffer) but ships each worker's
*mean* gradient and divides by the number of workers, so a worker whose batch
is short weighs as much as one whose batch is full. On equal batches that is
the right answer; on mpibench's uneven shards the ``equivalence`` invariant
fails at the first step whose batches differ in size, and the checker names
that step.
"""
from __future__ import annotations

import numpy as np

from mpibench.sync.base import Reduction, SyncStrategy


class UnweightedAllreduce(SyncStrategy):
    name = "unweighted-example"
    summary = "example plugin, deliberately wrong: averages the workers' mean gradients"

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self._result = backend.zeros(n_params + 1)

    def reduce(self, buf) -> Reduction:
        result = self._result if len(self._result) == len(buf) else self.backend.zeros(len(buf))
        self.comm.allreduce(buf, result)
        buf[...] = result
        return Reduction(self.comm.worker_ids, [(0, len(buf))], len(buf))

    def synchronize(self, params, grad_sum, count, lr):
        mean = grad_sum / np.float32(count) if count else np.zeros_like(grad_sum)
        self.backend.pack(self.buffer, mean, count)
        reduction = self.reduce(self.buffer)
        self.backend.apply_update(params, self.buffer[:-1], len(reduction.contributing), lr)
        return reduction
