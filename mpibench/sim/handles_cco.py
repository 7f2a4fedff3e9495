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
from .buffers import message
from .collectives import RESULTS
from .ops import reduce_in_order

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
    def _all(self, kind: str, payload) -> dict:
        return self._call(f"{kind}_buf", payload)

    def Gather(self, sendbuf, recvbuf, root: int = 0) -> None:
        size, rank = self.Get_size(), self.Get_rank()
        recv = message(recvbuf, blocks=size) if rank == root else None
        if rank == root and _in_place(sendbuf):
            mine = recv.read(rank * recv.count, recv.count)
        else:
            mine = message(sendbuf).read()
        got = self._all("gather", (mine,))
        if rank == root:
            for r, (values,) in got.items():
                recv.write(values, r * recv.count)

    def Scatter(self, sendbuf, recvbuf, root: int = 0) -> None:
        size, rank = self.Get_size(), self.Get_rank()
        if rank == root:
            send = message(sendbuf, blocks=size)
            payload = (send.read(), send.count)
        else:
            payload = (np.zeros(0), 0)
        values, count = self._all("scatter", payload)[root]
        if not (rank == root and _in_place(recvbuf)):
            message(recvbuf).write(values[rank * count:(rank + 1) * count])

    def Alltoall(self, sendbuf, recvbuf) -> None:
        size, rank = self.Get_size(), self.Get_rank()
        recv = message(recvbuf, blocks=size)
        send = recv if _in_place(sendbuf) else message(sendbuf, blocks=size)
        got = self._all("alltoall", (send.read(), send.count))
        for r, (values, count) in got.items():
            recv.write(values[rank * count:(rank + 1) * count], r * recv.count)

    def Reduce(self, sendbuf, recvbuf, op=M.SUM, root: int = 0) -> None:
        rank = self.Get_rank()
        recv = message(recvbuf) if rank == root else None
        mine = recv.read() if rank == root and _in_place(sendbuf) else message(sendbuf).read()
        got = self._all("reduce", (mine,))
        if rank == root:
            recv.write(reduce_in_order([values for values, in got.values()], op))

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=M.SUM) -> None:
        size, rank = self.Get_size(), self.Get_rank()
        recv = message(recvbuf)
        count = recv.total // size if _in_place(sendbuf) else recv.total
        mine = recv.read() if _in_place(sendbuf) else message(sendbuf).read()
        total = reduce_in_order([values for values, in self._all("reduce", (mine,)).values()], op)
        recv.write(total[rank * count:(rank + 1) * count])

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=M.SUM) -> None:
        rank = self.Get_rank()
        recv = message(recvbuf)
        if _in_place(sendbuf):
            mine, count = recv.read(), (recvcounts[rank] if recvcounts is not None else recv.total)
        else:
            mine, count = message(sendbuf).read(), recv.total
        got = self._all("reduce", (mine, count))
        counts = list(recvcounts) if recvcounts is not None else [c for _, c in got.values()]
        total = reduce_in_order([values for values, _ in got.values()], op)
        start = sum(counts[:rank])
        recv.write(total[start:start + counts[rank]])

    def _scan(self, sendbuf, recvbuf, op, exclusive: bool) -> None:
        rank = self.Get_rank()
        recv = message(recvbuf)
        mine = recv.read() if _in_place(sendbuf) else message(sendbuf).read()
        got = self._all("scan", (mine,))
        upto = [got[r][0] for r in sorted(got) if r < rank or (r == rank and not exclusive)]
        if upto:  # an exclusive scan leaves rank 0's buffer as it was
            recv.write(reduce_in_order(upto, op))

    def Scan(self, sendbuf, recvbuf, op=M.SUM) -> None:
        self._scan(sendbuf, recvbuf, op, exclusive=False)

    def Exscan(self, sendbuf, recvbuf, op=M.SUM) -> None:
        self._scan(sendbuf, recvbuf, op, exclusive=True)
