"""The commit protocol as a collective of its own: the agreement's time, calibrated in the run.

Every committed step ends with the membership agreeing on its outcome
(:func:`mpibench.faults.ulfm.agree`, ULFM's ``MPIX_Comm_agree``). The model
gives that agreement its own term, from the time measured here in the same
run: the median of back-to-back agreements on a duplicate of the job's
communicator (every rank), and on ``MPI.COMM_SELF`` (rank 0 alone, the p = 1
point's). The model (``results.costmodel.agreement_s``) scales it between.
"""
from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from mpibench.base import stats
from mpibench.faults import ulfm

from .timing import idle_until_released

AGREEMENTS = 50


def _median_agree_s(comm: MPI.Comm, repeats: int) -> float:
    times = np.empty(repeats)
    for k in range(repeats):
        start = time.perf_counter()
        ulfm.agree(comm, True)
        times[k] = time.perf_counter() - start
    return stats.median(times)


def agreement_s(world: MPI.Comm, repeats: int = AGREEMENTS) -> tuple[float, float]:
    """(agreement over ``world``, agreement on one rank), seconds; collective over ``world``."""
    comm = world.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    try:
        _median_agree_s(comm, 5)  # warm-up
        over = comm.allreduce(_median_agree_s(comm, repeats), op=MPI.MAX)
    finally:
        comm.Free()
    alone = _median_agree_s(MPI.COMM_SELF, repeats) if world.Get_rank() == 0 else None
    idle_until_released(world)
    return over, world.bcast(alone, root=0)



AGREE_HOW = {
    "agree_s": f"median of {AGREEMENTS} back-to-back commit agreements (faults.ulfm.agree) on a duplicate "
               "of the job's communicator, slowest rank",
    "agree_self_s": "the same on MPI.COMM_SELF, rank 0 alone",
}
