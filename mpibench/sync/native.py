"""Baseline: MPI's own Allreduce of the step buffer, as one piece."""
from __future__ import annotations

from .base import Reduction, SyncStrategy


class NativeAllreduce(SyncStrategy):
    name = "native"
    summary = "MPI's own non-blocking Allreduce of the whole buffer (the baseline)"
    option_names = ()

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self._result = backend.zeros(n_params + 1)

    def reduce(self, buf) -> Reduction:
        self.comm.allreduce(buf, self._result)
        buf[...] = self._result
        return Reduction(self.comm.worker_ids, [(0, len(buf))], len(buf))
