"""All-reduce from mpi4py's own demo, adapted as an mpibench plugin (a correct one).

Source: Intracomm.reduce/allreduce in mpi4py's demo/reductions/reductions.py,
https://github.com/mpi4py/mpi4py/blob/master/demo/reductions/reductions.py
(BSD-3-Clause, Copyright (c) 2025, Lisandro Dalcin; notice in ../NOTICE): a binomial
tree reduces into rank 0 (its mask loop kept as it is), which then broadcasts.
Buffers instead of pickled objects; the sum is the only operation mpibench needs.
"""
from mpibench.sync.base import Reduction, SyncStrategy


class TreeAllreduce(SyncStrategy):
    name = "mpi4py-tree"
    summary = "plugin from mpi4py's demo: binomial-tree reduce to rank 0, then broadcast"

    def reduce(self, buf) -> Reduction:
        comm, rank, size = self.comm, self.comm.rank, self.comm.size
        incoming, mask = self.backend.empty(len(buf)), 1
        while mask < size:
            if mask & rank:
                comm.send(buf, rank & ~mask)
            elif (rank | mask) < size:
                comm.recv(incoming, rank | mask)
                buf += incoming
            mask <<= 1
        comm.bcast(buf, 0)
        return Reduction(comm.worker_ids, [(0, len(buf))], len(buf))
