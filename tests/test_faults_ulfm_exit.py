"""How a job that lived through a failure hands its status to the launcher (faults/ulfm.py):
one member, the lowest of the exit communicator, carries a non-zero verdict, last; the others
leave with 0, since Open MPI's recoverable launcher was seen to deadlock on several non-zero
exits at once. A zero verdict is zero everywhere, and a lost communicator still leaves with it."""
from __future__ import annotations

import pytest
from mpi4py import MPI

from mpibench.faults import ulfm


class ExitComm:
    def __init__(self, rank):
        self.rank = rank

    def Get_rank(self):
        if self.rank is None:
            raise MPI.Exception(MPI.ERR_REVOKED)
        return self.rank


@pytest.mark.parametrize("code", [0, 1, 3])
@pytest.mark.parametrize("rank", [0, 1, 5, None])
def test_only_the_lowest_member_carries_a_non_zero_status(monkeypatch, code, rank):
    monkeypatch.setattr(ulfm, "LAST_TO_LEAVE_S", 0.0)
    monkeypatch.setattr(ulfm, "_exit_comm", ExitComm(rank))
    carries = rank in (0, None)  # a member that cannot tell its rank keeps the status: never a 0 for a fail
    assert ulfm._status_to_leave_with(code) == (code if carries else 0)


def test_without_an_exit_communicator_the_status_is_kept(monkeypatch):
    monkeypatch.setattr(ulfm, "LAST_TO_LEAVE_S", 0.0)
    monkeypatch.setattr(ulfm, "_exit_comm", None)
    assert ulfm._status_to_leave_with(1) == 1
