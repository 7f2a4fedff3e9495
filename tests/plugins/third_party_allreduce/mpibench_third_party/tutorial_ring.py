"""The ring all-reduce of PyTorch's distributed tutorial, adapted as an mpibench plugin.

Source: "Our Own Ring-Allreduce" in "Writing Distributed Applications with PyTorch",
https://github.com/pytorch/tutorials/blob/main/intermediate_source/dist_tuto.rst
(BSD-3-Clause, Copyright (c) 2017-2022, Pytorch contributors; notice in ../NOTICE),
written there over torch.distributed's isend/recv. Every rank passes whole buffers to
its right neighbour size-1 times and adds what arrives from its left, so each rank adds
the same numbers in its own order and the replicas may differ in their last bits:
mpibench's replicas invariant says where.
"""
from mpibench.sync.base import Reduction, SyncStrategy


class TutorialRing(SyncStrategy):
    name = "tutorial-ring"
    summary = "plugin from PyTorch's distributed tutorial: whole-buffer ring, each rank adds in its own order"

    def reduce(self, buf) -> Reduction:
        comm, size = self.comm, self.comm.size
        left, right = (comm.rank - 1) % size, (comm.rank + 1) % size
        send_buff, recv_buff, accum = buf.copy(), buf.copy(), buf.copy()
        for i in range(size - 1):
            out, into = (send_buff, recv_buff) if i % 2 == 0 else (recv_buff, send_buff)
            request = comm.isend(out, right)
            comm.recv(into, left)
            accum += into
            comm.wait([request])
        buf[...] = accum
        return Reduction(comm.worker_ids, [(0, len(buf))], len(buf))
