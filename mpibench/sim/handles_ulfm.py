"""A communicator handle's non-blocking ULFM calls, ``Iagree`` and ``Ishrink`` (a mixin of
:class:`mpibench.sim.handles.Comm`): the same collectives as ``Agree`` and ``Shrink``, whose
result reaches the caller when it sees the request done.

``Iagree`` takes its flag as mpi4py does, a buffer holding one C ``int`` that the agreed value
replaces; ``Ishrink`` returns the new communicator at once with its request, and the
communicator is usable once the request has completed (as MPI_Comm_ishrink's is).
"""
from __future__ import annotations

import numpy as np

from . import mpi as M
from .buffers import message
from .requests import Then


class _Pending:
    """A communicator handle that becomes the shrunk one when its request completes."""

    def __getattr__(self, name):
        raise AttributeError(f"the communicator of an Ishrink is usable once its request completed ({name})")


@M.uncharged
class NonBlockingULFM:
    def Iagree(self, flag):
        msg = message(flag)
        if msg.datatype.element() != np.dtype(np.intc) or msg.total != 1:
            raise ValueError("flag: expecting a buffer of one C int")
        req = self._start("agree", int(msg.read()[0]), family="agree", tolerant=True)
        return M.Request(Then(req, lambda value: msg.write(np.array([value], dtype=np.intc))))

    def Ishrink(self):
        shrunk = _Pending()

        def finish(comm):
            shrunk.__class__, shrunk.__dict__ = type(comm), comm.__dict__
        req = self._start("shrink", None, family="shrink", tolerant=True)
        return shrunk, M.Request(Then(req, finish))
