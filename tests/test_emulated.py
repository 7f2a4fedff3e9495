"""The strict emulated device: planted crossings are caught where they happen, and the
whole device path (ring, PS, native, shrink, respawn, bench) runs on it under both
transfer policies with every invariant passing and the per-step transfer counts
the policy promises.

Policies are chosen with ``MPIBENCH_CUDA_AWARE=0|1`` (staged / CUDA-aware); on
the emulated device CUDA-aware means MPI is handed the backing memory through
the policy's door, after a synchronise. Every MPI test reads the records
(invariants.csv, transfers.csv, bench.csv), never only the exit status.
"""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

from mpibench.sync.registry import CHECKED

from mpibench.kernels import CrossingError
from mpibench.kernels import transfer as tr
from mpibench.kernels.device_backend import DeviceBackend
from mpibench.kernels.emulated import EmulatedRuntime

HERE = os.path.basename(__file__)


def device():
    return DeviceBackend(EmulatedRuntime(), "emulated")


def raises_here(action, what: str) -> None:
    """``action`` raises a CrossingError naming this file and the line ``action`` is on."""
    line = action.__code__.co_firstlineno
    with pytest.raises(CrossingError, match=what) as err:
        action()
    assert f"{HERE}:{line} " in str(err.value), str(err.value)


# ----------------------------------------------------------------------------- planted crossings
B = device()
DEV = B.from_host(np.arange(6, dtype=np.float32))
HOST = np.ones(6, dtype=np.float32)
PLANTED = {
    "ufunc": (lambda: np.add(DEV, 1), "ufunc add"),
    "asarray": (lambda: np.asarray(DEV), "np.asarray"),
    "numpy function": (lambda: np.copyto(HOST, DEV), "NumPy function copyto"),
    "host into device": (lambda: DEV.__setitem__(slice(0, 6), HOST), "host array assigned"),
    "operator": (lambda: DEV * 2, "operator __mul__"),
    "host operand": (lambda: HOST + DEV, "ufunc add"),
    "float": (lambda: float(DEV[-1]), "float()"),
    "truth": (lambda: bool(DEV[0]), "truth value"),
    "iteration": (lambda: list(DEV), "iteration"),
    "pickle": (lambda: __import__("pickle").dumps(DEV), "pickled"),
    "kernel on host": (lambda: B.accumulate(DEV, HOST), "host ndarray given to a device kernel"),
    "MPI outside the policy": (lambda: __import__("mpi4py.MPI").MPI.COMM_SELF.Isend(DEV, 0, 9),
                               "handed to MPI"),
}


@pytest.mark.parametrize("kind", list(PLANTED))
def test_a_planted_crossing_names_its_file_and_line(kind):
    action, what = PLANTED[kind]
    raises_here(action, what)


def test_a_crossing_inside_a_back_end_op_also_names_the_op():
    b = device()
    with pytest.raises(CrossingError) as err:
        b.accumulate(b.zeros(3), np.zeros(3, dtype=np.float32))
    assert f"{HERE}:" in str(err.value) and "through" in str(err.value) and "device_backend.py" in str(err.value)


def test_mpi_given_a_device_buffer_with_queued_work_raises():
    b = device()
    buf = b.zeros(4)
    b.accumulate(buf, b.from_host(np.ones(4, dtype=np.float32)))  # queued, not run
    raises_here(lambda: b.rt.mpi_handle(buf), "work still queued")
    b.synchronize()
    assert b.rt.mpi_handle(buf) is not None


def test_mpi_given_a_staging_buffer_a_copy_still_writes_raises():
    b = device()
    t = tr.Transfer(tr.STAGED, "test", device=b.rt)
    host = np.zeros(4, dtype=np.float32)
    b.rt.download(b.from_host(np.ones(4, dtype=np.float32)), host, blocking=False)
    raises_here(lambda: t.outgoing(host), "queued device copy")
    b.synchronize()
    assert t.outgoing(host)[0] is host and np.array_equal(host, np.ones(4))


def test_queued_work_runs_only_at_a_synchronise():
    """A forgotten synchronise gives stale values (the invariants then name the step)."""
    b = device()
    buf = b.zeros(3)
    b.accumulate(buf, b.from_host(np.full(3, 2, dtype=np.float32)))
    assert not buf._data.any()  # what a host reader racing the stream would see
    assert np.array_equal(b.to_host(buf), np.full(3, 2))  # to_host waits for the stream


def test_uninitialised_device_memory_is_nan():
    b = device()
    assert np.isnan(b.to_host(b.empty(5))).all()


def test_doors_are_counted():
    b = device()
    before = dict(b.rt.copies)
    dev = b.from_host(np.ones(10, dtype=np.float32))
    b.to_host(dev)
    b.synchronize()
    after = b.rt.copies
    assert after["h2d"] - before.get("h2d", 0) == 1 and after["h2d_bytes"] - before.get("h2d_bytes", 0) == 40
    assert after["d2h"] - before.get("d2h", 0) == 1 and after["sync"] - before.get("sync", 0) == 1


def test_the_parameter_server_step_runs_on_the_device_path():
    """PS on one rank: the server's slice is uploaded and the pulled buffer downloaded (no crossing)."""
    from mpi4py import MPI

    from mpibench.sync.comm import Comm
    from mpibench.kernels import NumpyBackend
    from mpibench.sync import make_strategy

    results = []
    for backend in (NumpyBackend(), device()):
        comm = Comm(MPI.COMM_SELF, deadline_s=20, transfer=tr.Transfer(tr.STAGED, "test", device=getattr(backend, "rt", None)))
        ps = make_strategy("ps", comm, backend, 7, {"ps_shards": 3})
        params = np.linspace(-1, 1, 7, dtype=np.float32)
        ps.synchronize(params, np.arange(7, dtype=np.float32), 4, 0.5)
        results.append((params, ps.total_count()))
    assert np.array_equal(results[0][0], results[1][0]) and results[0][1] == results[1][1] == 4


# ----------------------------------------------------------------------------- under mpirun
N_PARAMS = 16 * 32 + 32 + 32 * 4 + 4  # the default MLP
STEP_BYTES = 4 * (N_PARAMS + 1)  # the step buffer: gradient sums and the count
MAIN_SCENARIOS = ["none", "kill-mid-reduction", "kill-ps-server", "partition-heal"]


def passed(checks):
    """The ``passed`` column as booleans (pandas may read ``true`` as a bool already)."""
    return checks["passed"].astype(str).str.lower() == "true"


def policy_env(aware: bool) -> list[str]:
    os.environ["MPIBENCH_CUDA_AWARE"] = "1" if aware else "0"
    return ["-x", "MPIBENCH_CUDA_AWARE"]


def launch(n, args, out, aware: bool, timeout=240, extra_env=()):
    from mpirun import mpirun_command, run_mpi

    command = mpirun_command()
    if "state_base_recoverable" not in command:
        command += ["--prtemca", "state_base_recoverable", "1"]
    try:
        flags = policy_env(aware) + [f for name in extra_env for f in ("-x", name)]
        return run_mpi(n, args, out, timeout=timeout, mpirun=command + flags)
    finally:
        os.environ.pop("MPIBENCH_CUDA_AWARE", None)


def compute_side(strategy: str, members: int) -> tuple[int, int]:
    """Bytes the back-end itself copies (host to device, device to host) per step on rank 0.

    ring and native: the step buffer up, the parameter mirror up and down, the count
    down. PS: one ``[slice, count]`` per shard up, rank 0's served slice up, the pulled
    ``[slice, count]`` buffer down, the count down.
    """
    n = N_PARAMS
    if strategy == "ps":
        from mpibench.sync import segments

        served = int(segments.shard_plan(n, members).widths[0][0])
        return 4 * (n + members) + 4 * served, 4 * (n + members) + 4
    return STEP_BYTES + 4 * n, 4 * n + 4


def check_policy(rows, aware: bool, members_of) -> None:
    """Every transfers.csv row against what the policy promises."""
    assert len(rows)
    for _, r in rows.iterrows():
        h2d, d2h = compute_side(r["strategy"], members_of(r))
        what = f"{r['scenario']}/{r['strategy']} step {r['step']}: {dict(r)}"
        assert r["policy"] == ("cuda-aware" if aware else "staged"), what
        assert r["mpi_out_bytes"] > 0 and r["mpi_in_bytes"] > 0, what
        staged_out, staged_in = (0, 0) if aware else (r["mpi_out_bytes"], r["mpi_in_bytes"])
        # Staged: each device byte MPI reads crosses to the host once and each byte it writes
        # comes back once; CUDA-aware: MPI adds no copy.
        assert (r["h2d_bytes"], r["d2h_bytes"]) == (h2d + staged_in, d2h + staged_out), what


@pytest.mark.mpi
@pytest.mark.parametrize("aware", [False, True], ids=["staged", "cuda-aware"])
def test_each_strategy_moves_what_its_policy_promises(tmp_path, aware):
    """p=2: ring and native hand MPI exactly one step buffer per step (one device-to-host
    copy of it when staged, none when CUDA-aware); PS its two [slice, count] messages."""
    for strategy in ("ring", "native", "ps"):
        out = tmp_path / strategy
        job = launch(2, ["run", "--strategy", strategy, "--device", "emulated", "--steps", "3",
                         "--bucket-bytes", "256"], out, aware, timeout=120)
        checks = job.csv("invariants.csv")
        assert len(checks) == 3 * 7 and passed(checks).all(), job.text  # six invariants and the contract
        rows = job.csv("transfers.csv")
        assert list(rows["step"]) == [0, 1, 2], job.text
        check_policy(rows, aware, lambda r: 2)
        assert rows["mpi_out_bytes"].nunique() == 1  # every step the same
        sent = int(rows["mpi_out_bytes"].iloc[0])
        if strategy == "ps":
            assert sent == 2 * 4 * (N_PARAMS // 2 + 1)  # push the other shard, serve own shard
        else:
            assert sent == STEP_BYTES
            assert rows["mpi_in_bytes"].iloc[0] == STEP_BYTES
        if strategy == "native":  # one buffer each way: one staged copy each way, or none
            assert (rows["mpi_out"] == 1).all() and (rows["mpi_in"] == 1).all()
            assert (rows["d2h"] == (2 if aware else 3)).all() and (rows["h2d"] == (2 if aware else 3)).all()


def members_from(job):
    """scenario/strategy/step -> the size of the step group rank 0 reduced over."""
    steps = job.csv("steps.csv")
    size = {(r.scenario, r.strategy, r.step): len(str(r.contributing).split()) for r in steps.itertuples()}
    return lambda r: size[(r["scenario"], r["strategy"], r["step"])]


@pytest.mark.mpi
@pytest.mark.parametrize("recovery, aware, benchmarks", [("shrink", False, True), ("respawn", True, False)],
                         ids=["shrink-staged-with-benchmarks", "respawn-cuda-aware"])
def test_the_main_job_holds_every_invariant_on_the_emulated_device(tmp_path, recovery, aware, benchmarks):
    os.environ["MPIBENCH_NO_BENCH"] = "0" if benchmarks else "1"
    os.environ["MPIBENCH_SCENARIOS"] = ",".join(MAIN_SCENARIOS)
    os.environ["MPIBENCH_STRATEGIES"] = ",".join(CHECKED)  # every strategy goes through the device path
    os.environ["MPIBENCH_NO_SWEEP"] = "1"  # the job's own random sweep is tested elsewhere
    names = ("MPIBENCH_NO_BENCH", "MPIBENCH_SCENARIOS", "MPIBENCH_STRATEGIES", "MPIBENCH_NO_SWEEP")
    try:
        job = launch(3, ["--device", "emulated", "--steps", "5", "--recovery", recovery], tmp_path, aware,
                     timeout=400, extra_env=names)
    finally:
        for name in names:
            del os.environ[name]
    if benchmarks:  # the benchmarks and the scaling runs went through the device path too
        bench = job.csv("bench.csv")
        measured = bench[bench.tag == "measured"]
        assert len(measured) and (measured.errors.astype(int) == 0).all(), job.text
        assert len(job.csv("scaling.csv")), job.text
    checks = job.csv("invariants.csv")
    for scenario in MAIN_SCENARIOS:
        for strategy in CHECKED:
            mine = checks[(checks.scenario == scenario) & (checks.strategy == strategy)]
            assert sorted(set(mine.step)) == list(range(5)), f"{scenario}/{strategy}\n{job.text}"
            assert passed(mine).all(), mine[~passed(mine)]
    assert not re.search(r"CrossingError|Traceback", job.text), job.text
    faults = job.csv("faults.csv")
    if recovery == "respawn":
        assert (faults.kind == "respawn").any(), job.text
    _kills_fired_where_scheduled(faults)
    rows = job.csv("transfers.csv")
    assert set(zip(rows.scenario, rows.strategy)) == {(s, k) for s in MAIN_SCENARIOS for k in CHECKED}
    check_policy(rows, aware, members_from(job))


# The mid-reduction kills' message counts (tests/test_scenarios_strategies.py leaves these
# scenarios to this file for the logarithmic strategies).
KILLED_AFTER = {"kill-mid-reduction": "after 2 message(s)", "kill-ps-server": "after 1 message(s)"}


def _kills_fired_where_scheduled(faults) -> None:
    """Each kill scenario killed the last worker once, mid-reduction, under every strategy."""
    for scenario, messages in KILLED_AFTER.items():
        for strategy in CHECKED:
            kills = faults[(faults.scenario == scenario) & (faults.strategy == strategy) & (faults.kind == "kill")]
            assert list(kills.phase) == ["mid_reduction"] and list(kills["rank"].astype(int)) == [2], \
                (scenario, strategy, kills)
            assert messages in kills.detail.iloc[0], (scenario, strategy, kills.detail.iloc[0])


@pytest.mark.mpi
@pytest.mark.parametrize("aware", [False, True], ids=["staged", "cuda-aware"])
def test_bench_on_the_emulated_device_is_exact(tmp_path, aware):
    job = launch(2, ["bench", "--device", "emulated", "--sizes", "4,4K,64K", "--iterations", "2",
                     "--warmup", "1", "--strategies", ",".join(CHECKED + ("native",))], tmp_path, aware,
                 timeout=180)
    bench = job.csv("bench.csv")
    measured = bench[bench.tag == "measured"]
    # every strategy through the device path, beside the blocking baseline on host buffers
    expected = set(CHECKED) | {"native", "blocking"}
    assert expected <= set(measured.strategy) <= expected | {"c_floor"}, job.text
    assert len(measured) == 3 * len(set(measured.strategy)), job.text
    assert (measured.errors.astype(float) == 0).all(), job.text
