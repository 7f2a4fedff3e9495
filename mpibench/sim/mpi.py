"""A stand-in for ``mpi4py.MPI``: the part of it mpibench calls, over the simulated world.

The process model (:mod:`mpibench.sim.process`) installs this module as
``mpi4py.MPI``, so the job, the strategies, the fault wrapper and the ULFM
recovery run unchanged on it. Each simulated process holds its own
:class:`Comm` handles (state shared in :mod:`mpibench.sim.world`); a blocking
call waits through the scheduler, so a process waiting for a message lets
the others run. ``COMM_WORLD`` and ``COMM_SELF`` resolve to the calling
process's own. What is not here is not simulated: using it raises
``AttributeError`` naming it, never a silent default.
"""
from __future__ import annotations

import numpy as np

from . import world as w

from .buffers import TYPES, Datatype  # noqa: F401 - MPI.Datatype, MPI.INT, MPI.FLOAT, ...
from .collectives import Error
from .ops import OPS, Op  # noqa: F401 - MPI.Op, MPI.SUM, MPI.MAX, ...

globals().update(TYPES)
globals().update(OPS)

ERR_OTHER, ERR_SPAWN, ERR_UNKNOWN, ERR_IN_STATUS = w.ERR_OTHER, w.ERR_SPAWN, 14, w.ERR_IN_STATUS
ERR_PROC_FAILED, ERR_PROC_FAILED_PENDING, ERR_REVOKED = w.ERR_PROC_FAILED, w.ERR_PROC_FAILED_PENDING, w.ERR_REVOKED
SUCCESS, IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 0, 1, 2, 3
UNDEFINED, ANY_SOURCE, ANY_TAG, PROC_NULL = -32766, -1, -1, -2
COMM_TYPE_SHARED = 0
UNIVERSE_SIZE = 8  # an attribute key, as mpi4py's MPI.UNIVERSE_SIZE
ERRORS_RETURN, ERRORS_ARE_FATAL = "errors_return", "errors_are_fatal"
THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3
IN_PLACE, BOTTOM = object(), object()  # distinct, as in a library where MPI_IN_PLACE != MPI_BOTTOM
ERR_ROOT, ERR_TRUNCATE, BSEND_OVERHEAD = 7, w.ERR_TRUNCATE, 96  # Open MPI 5's MPI_BSEND_OVERHEAD
_attached = {}  # process -> the buffer it attached (sends here never need it: they copy at once)
_STRINGS = {  # as Open MPI 5.0.11's MPI.Get_error_string gives them
    ERR_PROC_FAILED: "MPI_ERR_PROC_FAILED: Process Failure",
    ERR_PROC_FAILED_PENDING: "MPI_ERR_PROC_FAILED_PENDING: Process Failure during an MPI_ANY_SOURCE "
                             "non-blocking receive, request is still active",
    ERR_REVOKED: "MPI_ERR_REVOKED: Communication Object Revoked",
    ERR_SPAWN: "MPI_ERR_SPAWN: could not spawn processes",
    ERR_IN_STATUS: "MPI_ERR_IN_STATUS: error code in status",
    ERR_OTHER: "MPI_ERR_OTHER: known error not in list",
    ERR_TRUNCATE: "MPI_ERR_TRUNCATE: message truncated"}
ERR_PENDING = 19  # Open MPI 5's class: a request of a failed Waitall/Testall that is still pending
SIMULATED = True  # lets a reader of run.json's MPI section see the engine

_env = None  # the process model: .sched, .world, .proc() (the calling simulated process)


def bind(env) -> None:
    global _env
    _env = env


def Get_library_version() -> str:
    return "mpibench simulated MPI (ULFM semantics as documented for OMPI 5; virtual clock)"


def Get_version() -> tuple[int, int]:
    return (3, 1)


def get_vendor() -> tuple[str, tuple[int, int, int]]:
    return ("mpibench simulated MPI", (0, 0, 0))


def Wtime() -> float:
    return _env.sched.now()


def Query_thread() -> int:
    return THREAD_MULTIPLE  # as mpi4py initialises a real library


def Is_initialized() -> bool:
    return True


def Is_finalized() -> bool:
    return False


class Exception(Exception):  # noqa: A001 - mirrors mpi4py.MPI.Exception
    def __init__(self, error_class: int = ERR_OTHER):
        super().__init__(_STRINGS.get(error_class, f"MPI error class {error_class}"))
        self.error_class = error_class

    def Get_error_class(self) -> int:
        return self.error_class

    Get_error_code = Get_error_class

    def Get_error_string(self) -> str:
        return _STRINGS.get(self.error_class, f"MPI error class {self.error_class}")


def Get_error_class(code: int) -> int:
    return code  # the simulated library's codes are its classes


def Get_error_string(code: int) -> str:
    return _STRINGS.get(code, f"MPI error class {code}")


def Attach_buffer(buf) -> None:
    _attached[_env.proc()] = buf


def Detach_buffer():
    return _attached.pop(_env.proc(), None)


class buffer(bytearray):  # noqa: N801 - mirrors mpi4py.MPI.buffer
    @classmethod
    def allocate(cls, nbytes: int, clear: bool = False) -> "buffer":
        return cls(nbytes)


def Alloc_mem(nbytes: int, info=None) -> bytearray:
    return bytearray(nbytes)


def Free_mem(mem) -> None:
    pass


class Status:
    def __init__(self):
        self.source, self.tag, self.error = ANY_SOURCE, ANY_TAG, 0
        self.count_bytes = 0  # what the matched message carried (a truncated receive's too)

    def Get_count(self, datatype=None) -> int:
        size = datatype.Get_size() if datatype is not None and hasattr(datatype, "Get_size") else 1
        return self.count_bytes // max(size, 1)

    def Is_cancelled(self) -> bool:
        return False  # a send is never cancelled here (MPI lets a library refuse)

    def Get_error(self) -> int:
        return self.error

    def Get_source(self) -> int:
        return self.source

    def Get_tag(self) -> int:
        return self.tag


class Group:
    def __init__(self, procs):
        self.procs = list(procs)

    def Get_size(self) -> int:
        return len(self.procs)

    def Get_rank(self) -> int:
        me = _env.proc()
        return self.procs.index(me) if me in self.procs else UNDEFINED

    def Incl(self, ranks) -> "Group":
        return Group([self.procs[r] for r in ranks])

    def Free(self) -> None:
        pass

    @staticmethod
    def Compare(group1, group2) -> int:
        if group1.procs == group2.procs:
            return IDENT
        return SIMILAR if set(group1.procs) == set(group2.procs) else UNEQUAL

    @staticmethod
    def Translate_ranks(group1, ranks, group2) -> list[int]:
        return [group2.procs.index(group1.procs[r]) if group1.procs[r] in group2.procs else UNDEFINED
                for r in ranks]


GROUP_EMPTY = Group([])


class _Null:
    def __repr__(self) -> str:
        return "<simulated MPI null handle>"


COMM_NULL = _Null()


def uncharged(cls):
    """Every public method of ``cls`` runs as the simulated library: the simulator's own CPU
    time in it is never charged to the calling process (under ``measure_compute``), since
    what a real library call costs is already the network model's figure."""
    def wrap(fn):
        def call(*args, **kwargs):
            if _env is None or not _env.sched.measure_compute:  # nothing is charged: no bracket
                return fn(*args, **kwargs)
            actor = _env.sched.enter_library()
            try:
                return fn(*args, **kwargs)
            finally:
                if actor is not None:
                    _env.sched.leave_library(actor)
        call.__name__, call.__doc__, call.__wrapped__ = fn.__name__, fn.__doc__, fn
        return call

    for name, value in list(vars(cls).items()):
        if name[0].isupper() or name in ("isend", "irecv", "send", "recv", "bcast", "allgather", "gather",
                                         "allreduce", "barrier", "scatter", "sendrecv", "alltoall",
                                         "reduce", "scan", "exscan"):
            if isinstance(value, staticmethod):
                setattr(cls, name, staticmethod(wrap(value.__func__)))
            elif callable(value):
                setattr(cls, name, wrap(value))
    return cls


def _raise(error_class: int):
    raise Exception(error_class)


def _learn(req, error_class: int) -> None:
    """The caller's operation failed for a death: from now on it knows of the deaths it noticed."""
    if error_class in (ERR_PROC_FAILED, ERR_PROC_FAILED_PENDING):
        me = _env.proc()
        if me in req.comm.procs:
            req.comm.learn(req.comm.procs.index(me), _env.sched.now())


def _wait(req):
    """Block the calling process until ``req`` finishes; its result, or the MPI error."""
    _env.sched.block(lambda: req.ready_at(w.INF))
    state, error_class = req.outcome(_env.sched.now())
    if state == "error":
        _learn(req, error_class)
        _raise(error_class)
    result = req.result() if isinstance(req, w.CollReq) else None
    if isinstance(result, Error):
        _learn(req, result.error_class)
        _raise(result.error_class)
    return result


Request = Prequest = Grequest = REQUEST_NULL = None  # registered by mpibench.sim.requests


def _latest(reqs) -> float | None:
    times = [r.ready_at(w.INF) for r in reqs]
    return None if None in times else max(times, default=0.0)


def _states(reqs, statuses=None) -> list[str]:
    now = _env.sched.now()
    states = []
    for i, r in enumerate(reqs):
        state, error_class = r.outcome(now)
        if statuses is not None and i < len(statuses):
            statuses[i].error = error_class
            msg = getattr(r, "msg", None)
            if msg is not None:
                statuses[i].count_bytes = int(np.asarray(msg.data).nbytes)
        if state == "error":
            _learn(r, error_class)
        states.append(state)
    return states


def _all_done(reqs, statuses=None) -> bool:
    """Whether every request is done; ``ERR_IN_STATUS`` once one has failed, as Open MPI's
    MPI_Testall gives it (never the failed request's own class: that is in its status)."""
    states = _states(reqs, statuses)
    if "error" in states:
        _raise(ERR_IN_STATUS)
    return all(state == "done" for state in states)


Comm = Intracomm = Intercomm = None  # the handle class, registered by mpibench.sim.handles


def _handle(state, rank):
    return Comm(state, rank)


class _Own:
    """``COMM_WORLD`` / ``COMM_SELF``: the calling simulated process's own communicator."""

    def __init__(self, which: str):
        object.__setattr__(self, "which", which)

    def _target(self):
        return _env.own_comm(self.which)

    def __getattr__(self, name):
        return getattr(self._target(), name)

    def __eq__(self, other):
        return other is self._target() or isinstance(other, _Own) and other.which == self.which

    def __hash__(self):
        return hash(self.which)


COMM_WORLD, COMM_SELF = _Own("COMM_WORLD"), _Own("COMM_SELF")


def __getattr__(name: str):
    raise AttributeError(f"the simulated MPI does not implement MPI.{name}")
