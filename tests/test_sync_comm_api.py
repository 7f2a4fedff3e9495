"""The calls a strategy may use (docs/strategy-api.md), on one process (COMM_SELF), and what a
strategy must return: anything but a proper Reduction is one line naming the strategy."""
import numpy as np
import pytest
from mpi4py import MPI

from mpibench.base.config import UsageError
from mpibench.kernels import select_backend
from mpibench.sync.base import Reduction, StrategyError, SyncStrategy, checked
from mpibench.sync.comm import OPS, Comm, PeerLate


@pytest.fixture
def comm():
    return Comm(MPI.COMM_SELF.Dup(), worker_ids=(7,), deadline_s=0.05)


def test_wait_names_every_member_when_no_peers_are_given(comm):
    buf = np.zeros(3, dtype=np.float32)
    request = comm.irecv(buf, 0, tag=9)  # nobody sends: the deadline passes
    with pytest.raises(PeerLate) as caught:
        comm.wait([request])
    assert caught.value.peers == (7,)


def test_wait_still_takes_peers_as_before(comm):
    out, into = np.arange(4, dtype=np.float32), np.zeros(4, dtype=np.float32)
    comm.wait([comm.irecv(into, 0, tag=3), comm.isend(out, 0, tag=3)], (0,))
    assert (into == out).all()


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod", None])
def test_allreduce_takes_an_operation(comm, op):
    send, recv = np.array([1.5, -2.0, 3.0], dtype=np.float32), np.zeros(3, dtype=np.float32)
    if op is None:
        comm.allreduce(send, recv)  # the sum, as before
    else:
        comm.allreduce(send, recv, op=op)
    assert (recv == send).all()  # one member: every operation gives its own buffer


def test_allreduce_takes_an_mpi_op_and_refuses_an_unknown_name(comm):
    send, recv = np.ones(2, dtype=np.float64), np.zeros(2, dtype=np.float64)
    comm.allreduce(send, recv, op=MPI.MAX)
    assert (recv == 1).all()
    with pytest.raises(ValueError, match="no operation 'avg' .*sum, max, min"):
        comm.allreduce(send, recv, op="avg")
    assert set(OPS) >= {"sum", "max", "min"}


def test_barrier_and_the_mpi4py_names_of_rank_and_size(comm):
    comm.barrier()
    assert (comm.Get_rank(), comm.Get_size(), comm.rank, comm.size, comm.worker_id) == (0, 1, 0, 1, 7)


class Returns(SyncStrategy):
    name = "returns-example"
    value = None

    def reduce(self, buf):
        return self.value


@pytest.mark.parametrize("value,needle", [
    (None, "reduce() returned None, not a Reduction"),
    ((0,), "reduce() returned (0,), not a Reduction"),
    (Reduction(("a",), [(0, 4)], 4), "contributing is ('a',), not worker ids"),
    (Reduction((0,), [(0,)], 4), "pieces are [(0,)], not (offset, length) pairs"),
    (Reduction((0,), [(0, 4)], 4.0), "total_length is 4.0, not an int"),
])
def test_a_wrong_return_value_is_one_line_naming_the_strategy(value, needle):
    strategy = type("Bad", (Returns,), {"value": value, "__module__": __name__})(None, select_backend("cpu"), 3)
    grad = np.zeros(3, dtype=np.float32)
    with pytest.raises(StrategyError) as caught:
        strategy.synchronize(np.zeros(3, dtype=np.float32), grad, 2, 0.1)
    text = str(caught.value)
    assert isinstance(caught.value, UsageError)  # bad input: exit 2
    assert text.startswith(f"strategy 'returns-example' ({__name__}:") and needle in text, text
    assert "\n" not in text and "docs/strategy-api.md" in text


def test_checked_passes_a_proper_reduction_and_names_an_overridden_synchronize():
    good = Reduction((0, 2), [(0, 3), (3, 1)], 4)
    assert checked(Returns(None, select_backend("cpu"), 3), good, "reduce()") is good
    with pytest.raises(StrategyError, match=r"synchronize\(\) returned None"):
        checked(Returns(None, select_backend("cpu"), 3), None, "synchronize()")
