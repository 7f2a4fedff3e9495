"""An example third-party strategy: every rank sends its buffer to rank 0, which adds and sends back.

The smallest honest all-reduce there is, written against mpibench's public
interface only: subclass ``SyncStrategy``, implement ``reduce(buf)`` with the
communicator's buffer calls (``irecv``/``isend``/``wait``, which carry the
deadlines and the injected faults), and report who contributed and the
``(global offset, length)`` pieces the result was built from.
"""
from __future__ import annotations

from mpibench.sync.base import Reduction, SyncStrategy

_TAG = 71


class GatherBroadcast(SyncStrategy):
    name = "gather-bcast"
    summary = "example plugin: linear reduce to rank 0 in rank order, then send the sum back"
    option_names = ()

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self._inbox = None

    def reduce(self, buf) -> Reduction:
        comm, p = self.comm, self.comm.size
        if p > 1 and len(buf):
            if comm.rank == 0:
                if self._inbox is None or len(self._inbox[0]) != len(buf):
                    self._inbox = [self.backend.empty(len(buf)) for _ in range(p - 1)]
                comm.wait([comm.irecv(box, r + 1, _TAG) for r, box in enumerate(self._inbox)], range(p))
                for box in self._inbox:  # rank order: the same bits however the messages arrived
                    self.backend.accumulate(buf, box)
                comm.wait([comm.isend(buf, r, _TAG) for r in range(1, p)], range(p))
            else:
                comm.wait([comm.isend(buf, 0, _TAG)], (0,))
                comm.wait([comm.irecv(buf, 0, _TAG)], (0,))
        return Reduction(comm.worker_ids, [(0, len(buf))], len(buf))

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options=None) -> float:
        """(p-1) messages in and out through rank 0's link, p-1 adds there."""
        if p <= 1:
            return cal.call_overhead_s
        moved = 2 * (p - 1) * (cal.alpha_s + nbytes * cal.beta_s_per_byte)
        return moved + (p - 1) * nbytes * cal.gamma_s_per_byte(nbytes)
