"""run --overlap's pieces on one process: the buckets, the step sync, the communicator's started
all-reduce and the fault wrapper's count of it, the refusals and the option's round trip."""
from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from mpibench.base.config import RunConfig, UsageError
from mpibench.cli.job_commands import parse_run_args
from mpibench.engine.model import MLP, Shapes, init_params
from mpibench.faults import Schedule
from mpibench.faults.wrapper import FaultComm, Injector
from mpibench.kernels import select_backend
from mpibench.sim.cases import config_of
from mpibench.sync import registry
from mpibench.sync.base import SyncStrategy
from mpibench.sync.comm import Comm
from mpibench.sync.native import NativeAllreduce
from mpibench.sync.overlap import StepSync, plan_buckets
from mpirun import run_cli

SHAPES = Shapes(16, 32, 4)


@pytest.mark.parametrize("cap", [1, 7, 132, 133, 134, 544, 677, 1 << 20])
def test_buckets_tile_the_step_buffer_layer_by_layer_with_the_count_once(cap):
    spans, n = SHAPES.backward_spans(), SHAPES.n_params
    buckets = plan_buckets(spans, n, cap)  # in start order
    cursor = 0
    for b in sorted(buckets, key=lambda b: b.offset):
        assert b.offset == cursor and 0 < b.length <= cap
        cursor += b.length
    assert cursor == n + 1  # every gradient and the count slot, no gap, no overlap
    assert [b.layer for b in buckets] == sorted(b.layer for b in buckets)  # the last layer's start first
    for b in buckets:
        start, length = spans[b.layer]
        assert start <= b.offset and b.offset + b.length <= start + length + (start + length == n)
    assert sum(b.offset <= n < b.offset + b.length for b in buckets) == 1


def test_the_last_layer_comes_first_and_the_spans_cover_the_parameters():
    spans = SHAPES.backward_spans()
    assert spans[0][0] > spans[1][0] == 0 and spans[0][0] + spans[0][1] == SHAPES.n_params
    assert sum(length for _, length in spans) == SHAPES.n_params


class Spy(NativeAllreduce):
    def start_bucket(self, offset, length):
        self.events.append(("start", offset, length))
        return super().start_bucket(offset, length)


def one_step(overlap: bool, cap: int = 1 << 20):
    """One worker's step on COMM_SELF: (params after, the Reduction, what happened in order)."""
    comm = Comm(MPI.COMM_SELF.Dup(), (0,), deadline_s=5.0)
    strategy = Spy(comm, select_backend("cpu"), SHAPES.n_params, {"bucket_bytes": cap, "ps_shards": 0})
    strategy.events = events = []
    params = init_params(3, SHAPES)
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(11, 16)).astype(np.float32), rng.integers(0, 4, 11)
    sync = StepSync(strategy, SHAPES.backward_spans(), overlap)
    model = MLP(SHAPES)
    sync.begin(11, lambda: events.append("reduce"))

    def done(layer):
        events.append(f"layer {layer}")
        sync.layer_done(layer, model.grad_sum)

    grad, count, _ = model.loss_and_grad_sum(params, x, y, done)
    reduction = sync.finish(params, grad, count, 0.1)
    assert strategy.total_count() == 11
    return params, reduction, events


def test_each_bucket_starts_before_the_next_layer_computes_and_the_update_is_the_blocking_one():
    blocking, whole, quiet = one_step(False)
    assert quiet == ["layer 0", "layer 1", "reduce"] and whole.pieces == [(0, SHAPES.n_params + 1)]
    overlapped, buckets, events = one_step(True)
    n, (last, _) = SHAPES.n_params, SHAPES.backward_spans()[0]
    assert events == ["layer 0", "reduce", ("start", last, n + 1 - last), "layer 1", ("start", 0, last)]
    assert sorted(buckets.pieces) == [(0, last), (last, n + 1 - last)] and buckets.total_length == n + 1
    assert np.array_equal(overlapped, blocking)  # the same sums, the same division, bit for bit
    small, cut, _ = one_step(True, cap=4 * 50)
    assert len(cut.pieces) > 2 and np.array_equal(small, blocking)


def test_started_all_reduces_land_on_complete_and_the_wrapper_counts_each_once():
    schedule = Schedule("x", 1, ())
    injector = Injector(schedule, 0)
    comm = FaultComm(MPI.COMM_SELF.Dup(), (0,), 5.0, injector)
    comm.mark(0, "reduce")
    send, recv = np.arange(6, dtype=np.float32), np.zeros(6, dtype=np.float32)
    first, second = comm.iallreduce(send[:4], recv[:4]), comm.iallreduce(send[4:], recv[4:], op="max")
    assert injector.messages == 2  # counted as they start: a kill after k dies with bucket k in flight
    comm.complete([first, second])
    assert (recv == send).all()


def test_only_strategies_that_declare_a_nonblocking_reduction_overlap():
    assert registry.overlapping() == ("native",)
    assert all(not cls.overlaps for name, cls in registry.BUILTIN.items() if name != "native")

    class Claims(SyncStrategy):  # says it overlaps, has nothing to overlap with
        overlaps = True

        def reduce(self, buf):
            raise AssertionError

    with pytest.raises(UsageError, match="declares overlaps but does not implement start_bucket"):
        registry._checked(Claims, "--strategy x:Claims")


@pytest.mark.parametrize("args", [["run", "--engine", "sim", "--ranks", "2", "--strategy", "ring", "--overlap"],
                                  ["sweep", "--engine", "sim", "--overlap", "--strategies", "native,ps"]])
def test_overlap_with_a_blocking_strategy_is_refused_in_one_line(args):
    job = run_cli(args, timeout=120)
    assert job.returncode == 2 and "Traceback" not in job.text, job.text
    line, = job.stderr.strip().splitlines()
    assert "--overlap needs a strategy with a nonblocking reduction (native)" in line


def test_the_flag_travels_in_replays_and_both_readers_of_run_arguments_agree(tmp_path):
    config = RunConfig(strategy="native", scenario="none", overlap=True)
    args = config.cli_args()
    assert "--overlap" in args and args[args.index("--overlap") + 1:][:1] != ["True"]
    line = ["run", *args, "--samples", "90", "--out", str(tmp_path)]
    real, out = parse_run_args(line)
    simulated, sim_out = config_of(line)
    assert real == simulated and real.overlap and out == sim_out
    assert not config_of(["run", "--steps", "3"])[0].overlap
    with pytest.raises(UsageError):
        config_of(["run", "--overlap", "--steps"])


def test_overlap_on_the_strict_emulated_device_crosses_nothing_implicitly(tmp_path):
    """The buckets are slices of a device buffer, packed and handed to MPI as any buffer is:
    on the emulated device every implicit host/device crossing would be an error."""
    job = run_cli(["run", "--engine", "sim", "--ranks", "3", "--strategy", "native", "--overlap", "--device",
                   "emulated", "--scenario", "kill-mid-reduction", "--steps", "5", "--out", str(tmp_path / "out")],
                  timeout=120)
    assert job.returncode == 0 and "verdict: pass" in job.stdout, job.text[-3000:]
