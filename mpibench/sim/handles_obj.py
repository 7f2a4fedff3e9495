"""A communicator handle's collectives over Python objects beyond the ones mpibench calls:
``barrier``, ``scatter``, ``alltoall``, ``reduce``, ``scan`` and ``exscan`` (a mixin of
:class:`mpibench.sim.handles.Comm`).

Objects travel pickled, as mpi4py sends them, so every receiver gets its own copy; the
reductions combine them left to right in rank order with the operation's object rule
(:class:`mpibench.sim.ops.Op`). A root outside the communicator fails with ``ERR_ROOT``.
"""
from __future__ import annotations

import functools
import pickle

import numpy as np

from . import mpi as M


def _packed(obj) -> tuple:
    return (np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8),)


def _unpacked(payload):
    return pickle.loads(payload[0].tobytes())


@M.uncharged
class ObjectCollectives:
    def _objects(self, kind: str, obj) -> list:
        """Every member's object, in rank order (this process's own copies)."""
        got = self._call(f"{kind}_buf", _packed(obj))
        return [_unpacked(got[r]) for r in sorted(got)]

    def _root(self, root: int) -> None:
        if not 0 <= root < self.Get_size():
            M._raise(M.ERR_ROOT)

    def barrier(self) -> None:
        self.Barrier()

    def scatter(self, sendobj, root: int = 0):
        self._root(root)
        return self._objects("scatter", sendobj if self.Get_rank() == root else None)[root][self.Get_rank()]

    def alltoall(self, sendobj) -> list:
        return [sent[self.Get_rank()] for sent in self._objects("alltoall", sendobj)]

    def reduce(self, sendobj, op=M.SUM, root: int = 0):
        self._root(root)
        values = self._objects("reduce", sendobj)
        return functools.reduce(op, values) if self.Get_rank() == root else None

    def scan(self, sendobj, op=M.SUM):
        return functools.reduce(op, self._objects("scan", sendobj)[:self.Get_rank() + 1])

    def exscan(self, sendobj, op=M.SUM):
        before = self._objects("scan", sendobj)[:self.Get_rank()]
        return functools.reduce(op, before) if before else None
