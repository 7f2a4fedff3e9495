"""A communicator handle's collectives over message specifications: gather, scatter, all-to-all,
reductions to a root, reduce-scatter and scans (a mixin of :class:`mpibench.sim.handles.Comm`).

Each is one simulated collective in which every member hands in its contribution and receives
all of them (:func:`exchange`); each member then takes its own result from them, in rank
order, as the specification says. ``MPI.IN_PLACE`` (or ``None`` as the send buffer, as mpi4py
reads it) takes the contribution from the receive buffer. The completion time is the network
model's for the collective's kind.
"""
from __future__ import annotations

import numpy as np

from . import mpi as M
from .buffers import message, vector
from .collectives import RESULTS
from .ops import reduce_in_order
from .requests import Then

KINDS = ("gather", "scatter", "alltoall", "reduce", "scan")


def exchange(world, coll, absent) -> None:
    """Every contributing rank gets every contribution (rank -> payload; read only)."""
    got = {r: coll.contribs[r][1] for r in sorted(coll.contribs)}
    for r in coll.contribs:
        coll.results[r] = got


RESULTS.update({f"{kind}_buf": exchange for kind in KINDS})


def array_of(spec):
    """An array as it is (what mpibench passes), else the typed view a specification names."""
    if spec is None or isinstance(spec, np.ndarray):
        return spec
    return message(spec).view()


def _in_place(buf) -> bool:
    return buf is M.IN_PLACE or buf is None


@M.uncharged
class BufferCollectives:
    def _post(self, kind: str, payload, finish):
        """Post one exchange; ``finish`` takes every contribution (rank -> payload) once this
        process sees the collective done, and writes this process's share."""
        return M.Request(Then(self._start(f"{kind}_buf", payload), finish))

    def Igather(self, sendbuf, recvbuf, root: int = 0):
        size, rank = self.Get_size(), self.Get_rank()
        recv = message(recvbuf, blocks=size) if rank == root else None
        if rank == root and _in_place(sendbuf):
            mine = recv.read(rank * recv.count, recv.count)
        else:
            mine = message(sendbuf).read()

        def finish(got):
            if rank == root:
                for r, (values,) in got.items():
                    recv.write(values, r * recv.count)
        return self._post("gather", (mine,), finish)

    def Iscatter(self, sendbuf, recvbuf, root: int = 0):
        size, rank = self.Get_size(), self.Get_rank()
        if rank == root:
            send = message(sendbuf, blocks=size)
            payload = (send.read(), send.count)
        else:
            payload = (np.zeros(0), 0)
        recv = None if rank == root and _in_place(recvbuf) else message(recvbuf)

        def finish(got):
            values, count = got[root]
            if recv is not None:
                recv.write(values[rank * count:(rank + 1) * count])
        return self._post("scatter", payload, finish)

    def Ialltoall(self, sendbuf, recvbuf):
        size, rank = self.Get_size(), self.Get_rank()
        recv = message(recvbuf, blocks=size)
        send = recv if _in_place(sendbuf) else message(sendbuf, blocks=size)

        def finish(got):
            for r, (values, count) in got.items():
                recv.write(values[rank * count:(rank + 1) * count], r * recv.count)
        return self._post("alltoall", (send.read(), send.count), finish)

    def Ireduce(self, sendbuf, recvbuf, op=M.SUM, root: int = 0):
        rank = self.Get_rank()
        recv = message(recvbuf) if rank == root else None
        mine = recv.read() if rank == root and _in_place(sendbuf) else message(sendbuf).read()

        def finish(got):
            if rank == root:
                recv.write(reduce_in_order([values for values, in got.values()], op))
        return self._post("reduce", (mine,), finish)

    def Ireduce_scatter_block(self, sendbuf, recvbuf, op=M.SUM):
        size, rank = self.Get_size(), self.Get_rank()
        recv = message(recvbuf)
        count = recv.total // size if _in_place(sendbuf) else recv.total
        mine = recv.read() if _in_place(sendbuf) else message(sendbuf).read()

        def finish(got):
            total = reduce_in_order([values for values, in got.values()], op)
            recv.write(total[rank * count:(rank + 1) * count])
        return self._post("reduce", (mine,), finish)

    def Ireduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=M.SUM):
        rank = self.Get_rank()
        recv = message(recvbuf)
        if _in_place(sendbuf):
            mine, count = recv.read(), (recvcounts[rank] if recvcounts is not None else recv.total)
        else:
            mine, count = message(sendbuf).read(), recv.total

        def finish(got):
            counts = list(recvcounts) if recvcounts is not None else [c for _, c in got.values()]
            total = reduce_in_order([values for values, _ in got.values()], op)
            start = sum(counts[:rank])
            recv.write(total[start:start + counts[rank]])
        return self._post("reduce", (mine, count), finish)

    def _iscan(self, sendbuf, recvbuf, op, exclusive: bool):
        rank = self.Get_rank()
        recv = message(recvbuf)
        mine = recv.read() if _in_place(sendbuf) else message(sendbuf).read()

        def finish(got):
            upto = [got[r][0] for r in sorted(got) if r < rank or (r == rank and not exclusive)]
            if upto:  # an exclusive scan leaves rank 0's buffer as it was
                recv.write(reduce_in_order(upto, op))
        return self._post("scan", (mine,), finish)

    def Iscan(self, sendbuf, recvbuf, op=M.SUM):
        return self._iscan(sendbuf, recvbuf, op, exclusive=False)

    def Iexscan(self, sendbuf, recvbuf, op=M.SUM):
        return self._iscan(sendbuf, recvbuf, op, exclusive=True)

    # -- the blocking calls: the non-blocking one, waited for
    def Gather(self, sendbuf, recvbuf, root: int = 0) -> None:
        self.Igather(sendbuf, recvbuf, root).Wait()

    def Scatter(self, sendbuf, recvbuf, root: int = 0) -> None:
        self.Iscatter(sendbuf, recvbuf, root).Wait()

    def Alltoall(self, sendbuf, recvbuf) -> None:
        self.Ialltoall(sendbuf, recvbuf).Wait()

    def Reduce(self, sendbuf, recvbuf, op=M.SUM, root: int = 0) -> None:
        self.Ireduce(sendbuf, recvbuf, op, root).Wait()

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=M.SUM) -> None:
        self.Ireduce_scatter_block(sendbuf, recvbuf, op).Wait()

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=M.SUM) -> None:
        self.Ireduce_scatter(sendbuf, recvbuf, recvcounts, op).Wait()

    def Scan(self, sendbuf, recvbuf, op=M.SUM) -> None:
        self.Iscan(sendbuf, recvbuf, op).Wait()

    def Exscan(self, sendbuf, recvbuf, op=M.SUM) -> None:
        self.Iexscan(sendbuf, recvbuf, op).Wait()

    # -- vector collectives: each rank's count and displacement
    def Igatherv(self, sendbuf, recvbuf, root: int = 0):
        size, rank = self.Get_size(), self.Get_rank()
        whole, counts, displs = vector(recvbuf, size) if rank == root else (None, None, None)
        if rank == root and _in_place(sendbuf):
            mine = whole.read(displs[rank], counts[rank])
        else:
            mine = message(sendbuf).read()

        def finish(got):
            if rank == root:
                for r, (values,) in got.items():
                    whole.write(values[:counts[r]], displs[r])
        return self._post("gather", (mine,), finish)

    def Iscatterv(self, sendbuf, recvbuf, root: int = 0):
        size, rank = self.Get_size(), self.Get_rank()
        if rank == root:
            whole, counts, displs = vector(sendbuf, size)
            payload = (whole.read(), counts, displs)
        else:
            payload = (np.zeros(0), None, None)
        recv = None if rank == root and _in_place(recvbuf) else message(recvbuf)

        def finish(got):
            values, counts, displs = got[root]
            if recv is not None:
                recv.write(values[displs[rank]:displs[rank] + counts[rank]])
        return self._post("scatter", payload, finish)

    def Iallgatherv(self, sendbuf, recvbuf):
        size, rank = self.Get_size(), self.Get_rank()
        whole, counts, displs = vector(recvbuf, size)
        mine = whole.read(displs[rank], counts[rank]) if _in_place(sendbuf) else message(sendbuf).read()

        def finish(got):
            for r, (values,) in got.items():
                whole.write(values[:counts[r]], displs[r])
        return self._post("gather", (mine,), finish)

    def Ialltoallv(self, sendbuf, recvbuf):
        size, rank = self.Get_size(), self.Get_rank()
        recv, rcounts, rdispls = vector(recvbuf, size)
        send, scounts, sdispls = (recv, rcounts, rdispls) if _in_place(sendbuf) else vector(sendbuf, size)

        def finish(got):
            for r, (values, counts, displs) in got.items():
                block = values[displs[rank]:displs[rank] + counts[rank]]
                recv.write(block[:rcounts[r]], rdispls[r])
        return self._post("alltoall", (send.read(), scounts, sdispls), finish)

    def Gatherv(self, sendbuf, recvbuf, root: int = 0) -> None:
        self.Igatherv(sendbuf, recvbuf, root).Wait()

    def Scatterv(self, sendbuf, recvbuf, root: int = 0) -> None:
        self.Iscatterv(sendbuf, recvbuf, root).Wait()

    def Allgatherv(self, sendbuf, recvbuf) -> None:
        self.Iallgatherv(sendbuf, recvbuf).Wait()

    def Alltoallv(self, sendbuf, recvbuf) -> None:
        self.Ialltoallv(sendbuf, recvbuf).Wait()
