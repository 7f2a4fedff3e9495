"""Array back-ends: one set of test bodies, run on NumPy, on the strict emulated
device always, and on CuPy where a GPU is.

The CuPy kernels are compiled without multiply-add contraction, so every
back-end must give the same bits as plain float32 NumPy arithmetic; the
tests compare with ``==`` and, separately, with a float64 reference within
float32 rounding. The emulated device runs the device code path (the same
``DeviceBackend`` as CuPy) with every implicit host/device crossing an error.
Without a GPU the CuPy cases skip with the reason ``gpu_available()`` gives. Also here: the device choice for ``--device``,
the transfer policy (host pass-through, staged and CUDA-aware device
buffers through the communicator) and the CLI's answers without a GPU.
"""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mpibench.base.config import UsageError
from mpibench.kernels import BackendError, DeviceUnavailable, NumpyBackend, select_backend
from mpibench.kernels import transfer as tr
from mpibench.kernels.cupy_backend import gpu_available

NO_GPU = gpu_available()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"no GPU: {NO_GPU}")
needs_no_gpu = pytest.mark.skipif(NO_GPU is None, reason="a GPU is present")

BACKENDS = ["numpy", "emulated", pytest.param("cupy", marks=[needs_gpu, pytest.mark.gpu])]
DEVICE_BACKENDS = BACKENDS[1:]
EPS32 = float(np.finfo(np.float32).eps)


def make(name: str):
    if name == "numpy":
        return NumpyBackend()
    if name == "emulated":
        from mpibench.kernels.device_backend import DeviceBackend
        from mpibench.kernels.emulated import EmulatedRuntime

        return DeviceBackend(EmulatedRuntime(), "emulated")
    from mpibench.kernels.cupy_backend import CupyBackend

    return CupyBackend()


_CACHE: dict = {}


def backend_of(name: str):
    """One back-end object per kind for the whole module (CuPy compiles kernels once)."""
    if name not in _CACHE:
        _CACHE[name] = make(name)
    return _CACHE[name]


finite32 = st.floats(-1e6, 1e6, width=32, allow_subnormal=False)


def vectors(min_size=0, max_size=300):
    return hnp.arrays(np.float32, st.integers(min_size, max_size), elements=finite32)


# ----------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("name", BACKENDS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_accumulate_is_float32_addition(name, data):
    b = backend_of(name)
    dst_h = data.draw(vectors())
    src_h = data.draw(hnp.arrays(np.float32, len(dst_h), elements=finite32))
    dst = b.from_host(dst_h.copy())
    b.accumulate(dst, b.from_host(src_h))
    assert np.array_equal(b.to_host(dst), flushed(dst_h + src_h, name))


@pytest.mark.parametrize("name", BACKENDS)
def test_accumulate_into_a_segment_leaves_the_rest(name):
    b = backend_of(name)
    buf = b.from_host(np.arange(10, dtype=np.float32))
    b.accumulate(buf[3:7], b.from_host(np.full(4, 0.5, dtype=np.float32)))
    want = np.arange(10, dtype=np.float32)
    want[3:7] += 0.5
    assert np.array_equal(b.to_host(buf), want)


@pytest.mark.parametrize("name", BACKENDS)
@settings(max_examples=30, deadline=None)
@given(grad=vectors(), count=st.integers(0, 1 << 20))
def test_pack_puts_the_count_last(name, grad, count):
    b = backend_of(name)
    buf = b.zeros(len(grad) + 1)
    b.pack(buf, grad, count)
    got = b.to_host(buf)
    assert np.array_equal(got[:-1], grad) and got[-1] == np.float32(count)


@pytest.mark.parametrize("name", DEVICE_BACKENDS)
def test_pack_from_a_device_gradient_is_one_kernel_with_the_same_result(name):
    b = backend_of(name)
    grad = np.linspace(-3, 3, 1001, dtype=np.float32)
    buf = b.zeros(1002)
    b.pack(buf, b.from_host(grad), 17)
    assert np.array_equal(b.to_host(buf), np.append(grad, np.float32(17)))


def flushed(values, name):
    """What a back-end that flushes subnormal results to zero gives for ``values``.

    CuPy compiles every kernel with ``-ftz=true`` and appends it after the
    caller's options, so it cannot be turned off (cupy/cupy#9576): a GPU result
    that would be subnormal is zero. The other back-ends keep subnormals.
    """
    values = np.asarray(values, dtype=np.float32)
    if name != "cupy":
        return values
    return np.where(np.abs(values) < np.finfo(np.float32).tiny, np.float32(0), values)


def reference_update(params, grad, count, lr, name="numpy"):
    """The float32 steps NumPy takes: divide, scale, subtract, each rounded once."""
    if count == 0:
        return params.copy()
    scaled = flushed(flushed(grad / np.float32(count), name) * np.float32(lr), name)
    return flushed(params - scaled, name)


def count_forms(b, count, length):
    """The ways a count reaches apply_update: int, NumPy scalar, the reduced buffer's last slot."""
    slot = b.zeros(length + 1)
    slot[-1] = count
    return {"int": int(count), "float32": np.float32(count), "slot": slot[-1]}


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("form", ["int", "float32", "slot"])
@pytest.mark.parametrize("params_on", ["host", "device"])
@settings(max_examples=25, deadline=None)
@given(data=st.data(), count=st.integers(0, 5000), lr=st.floats(float(np.float32(1e-4)), 2.0, width=32))
def test_apply_update_matches_numpy_bit_for_bit(name, form, params_on, data, count, lr):
    b = backend_of(name)
    params_h = data.draw(vectors(1))
    grad_h = data.draw(hnp.arrays(np.float32, len(params_h), elements=finite32))
    params = params_h.copy() if params_on == "host" else b.from_host(params_h.copy())
    b.apply_update(params, b.from_host(grad_h.copy()), count_forms(b, count, 1)[form], lr)
    got = params if params_on == "host" else b.to_host(params)
    want = reference_update(params_h, grad_h, count, lr, name)
    assert np.array_equal(got, want)
    if count:
        exact = params_h.astype(np.float64) - lr * (grad_h.astype(np.float64) / count)
        scale = np.abs(params_h) + lr * np.abs(grad_h) / count
        assert np.all(np.abs(got - exact) <= 4 * EPS32 * scale + 1e-30)


@pytest.mark.parametrize("name", BACKENDS)
def test_zero_count_is_no_update(name):
    b = backend_of(name)
    params = np.ones(5, dtype=np.float32)
    b.apply_update(params, b.from_host(np.full(5, 7, dtype=np.float32)), 0, 0.1)
    assert np.array_equal(params, np.ones(5, dtype=np.float32))


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("length", [0, 1, 7, 4096])
def test_allocation_and_round_trip(name, length):
    b = backend_of(name)
    z = b.zeros(length)
    assert z.dtype == np.float32 and len(z) == length and not b.to_host(z).any()
    assert len(b.empty(length, dtype=np.float64)) == length
    host = np.arange(length, dtype=np.float32)
    assert np.array_equal(b.to_host(b.from_host(host)), host)
    b.synchronize()


# ----------------------------------------------------------------------------- choosing
def test_cpu_is_numpy_on_the_host_path():
    b = select_backend("cpu")
    assert b.name == "numpy" and b.info["transfer"] == "host" and b.info["fallback"] is None


def test_unknown_device_is_the_kernels_own_error():
    with pytest.raises(BackendError, match="unknown device") as err:
        select_backend("tpu")
    assert not isinstance(err.value, UsageError)  # the job layer turns it into bad usage


@needs_no_gpu
def test_gpu_without_a_gpu_says_why():
    with pytest.raises(DeviceUnavailable, match="--device gpu: ") as err:
        select_backend("gpu")
    assert "\n" not in str(err.value)


@needs_no_gpu
def test_auto_without_a_gpu_falls_back_and_says_so():
    b = select_backend("auto")
    assert b.name == "numpy" and b.info["requested"] == "auto"
    assert b.info["fallback"].startswith("no GPU, using the CPU: ")


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("device", ["gpu", "auto"])
def test_gpu_and_auto_take_the_gpu(device):
    b = select_backend(device)
    assert b.name == "cupy" and b.info["fallback"] is None
    assert b.info["transfer"] in ("cuda-aware", "staged") and b.info["device_name"]


# ----------------------------------------------------------------------------- transfers
class FakeDeviceArray:
    __cuda_array_interface__ = {"shape": (1,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_host_buffers_pass_through_untouched():
    t = tr.Transfer()
    buf = np.zeros(4, dtype=np.float32)
    for direction in (t.outgoing, t.incoming, t.both):
        got, done = direction(buf)
        assert got is buf and done is None
    assert not t.moved


def test_a_device_buffer_hidden_in_a_spec_is_refused():
    from mpi4py import MPI

    with pytest.raises(TypeError, match="not as \\[buffer, type\\]"):
        tr.Transfer().outgoing([FakeDeviceArray(), MPI.FLOAT])


@pytest.mark.parametrize("value, aware", [("0", False), ("1", True)])
def test_the_override_decides_and_is_named(monkeypatch, value, aware):
    monkeypatch.setenv(tr.OVERRIDE_ENV, value)
    got, probe = tr.cuda_aware_mpi()
    assert got is aware and tr.OVERRIDE_ENV in probe
    assert tr.Transfer().device_path == (tr.CUDA_AWARE if aware else tr.STAGED)


def test_the_library_is_asked(monkeypatch):
    monkeypatch.delenv(tr.OVERRIDE_ENV, raising=False)
    aware, probe = tr.cuda_aware_mpi()
    assert isinstance(aware, bool) and probe
    from mpi4py import MPI

    if "Open MPI" in MPI.Get_library_version():
        assert probe.startswith("MPIX_Query_cuda_support() returned")


def device_paths():
    """Staged always works on a GPU; direct only where the library says it is CUDA-aware."""
    paths = [tr.STAGED]
    if NO_GPU is None and tr.cuda_aware_mpi()[0]:
        paths.append(tr.CUDA_AWARE)
    return paths


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("path", [tr.STAGED, tr.CUDA_AWARE])
def test_comm_moves_buffers_of_either_back_end(name, path):
    """Point to point to itself, allreduce and bcast on COMM_SELF, through the policy."""
    from mpi4py import MPI

    from mpibench.sync.comm import Comm

    if name == "cupy" and path not in device_paths():
        pytest.skip("the MPI library is not CUDA-aware")
    b = backend_of(name)
    t = tr.Transfer(path, "test", device=getattr(b, "rt", None))
    comm = Comm(MPI.COMM_SELF, deadline_s=20, transfer=t)
    copies_before = dict(b.rt.copies) if name != "numpy" else {}
    host = np.arange(1000, dtype=np.float32)
    send, recv = b.from_host(host.copy()), b.zeros(1000)
    comm.sendrecv(send, 0, recv, 0, tag=3)
    assert np.array_equal(b.to_host(recv), host)
    later = b.zeros(1000)
    requests = [comm.irecv(later[:500], 0, 4), comm.isend(send[500:], 0, 4)]
    comm.wait(requests, (0,))
    assert np.array_equal(b.to_host(later[:500]), host[500:])
    total = b.zeros(1000)
    comm.allreduce(send, total)
    comm.bcast(total, 0)
    assert np.array_equal(b.to_host(total), host)
    assert not comm._after  # every staged landing ran
    assert sum(t.moved.values()) == (0 if name == "numpy" else 7)  # 2 + 2 + 2 + 1
    if name == "numpy":
        assert not t.counts
        return
    # MPI read 1000 + 500 + 1000 + 1000 (bcast) floats of device memory and wrote as many.
    assert t.counts["out_bytes"] == t.counts["in_bytes"] == 4 * 3500
    staged_d2h = b.rt.copies["d2h_bytes"] - copies_before.get("d2h_bytes", 0) - 4 * (1000 + 500 + 1000)
    staged_h2d = b.rt.copies["h2d_bytes"] - copies_before.get("h2d_bytes", 0) - 4 * 1000  # from_host(send)
    # Staged: each byte MPI reads crossed to the host once, each byte it wrote came back once
    # (beyond the test's own to_host reads); CUDA-aware: no copy at all.
    assert (staged_d2h, staged_h2d) == ((4 * 3500, 4 * 3500) if path == tr.STAGED else (0, 0))
    # Staging goes through the pinned pool, and the pool counts what it holds.
    assert (t.pool.allocated_bytes > 0) == (path == tr.STAGED)


@pytest.mark.parametrize("name", DEVICE_BACKENDS)
def test_pinned_buffers_are_reused(name):
    pool = tr.PinnedPool(backend_of(name).rt.pinned_empty)
    pool.reserve(10_000)
    allocated = pool.allocated_bytes
    for _ in range(5):
        a, c = pool.take(9_000), pool.take(100)
        pool.give(a)
        pool.give(c)
    assert pool.allocated_bytes == allocated


# ----------------------------------------------------------------------------- command line
@needs_no_gpu
def test_cli_device_gpu_without_a_gpu_exits_2_in_one_line(tmp_path):
    from mpirun import run_cli

    job = run_cli(["run", "--device", "gpu", "--steps", "1", "--out", str(tmp_path / "o")])
    assert job.returncode == 2, job.text
    lines = job.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpibench: error: --device gpu: "), job.stderr


def test_cli_device_auto_records_the_choice(tmp_path):
    from mpirun import run_cli

    out = tmp_path / "o"
    job = run_cli(["run", "--device", "auto", "--steps", "2", "--out", str(out)])
    assert job.returncode == 0, job.text
    device = json.loads((out / "run.json").read_text())["device"]
    assert device["requested"] == "auto"
    if NO_GPU is None:
        assert device["backend"] == "cupy" and device["transfer"] in ("cuda-aware", "staged")
        assert f"transfers: {device['transfer']}" in job.stdout
    else:
        assert device["backend"] == "numpy" and device["transfer"] == "host"
        assert device["fallback"].startswith("no GPU, using the CPU")
        assert "transfers: host; no GPU, using the CPU" in job.stdout


DEVICE_OF = {"numpy": "cpu", "emulated": "emulated", "cupy": "gpu"}


@pytest.mark.mpi
@pytest.mark.parametrize("name", BACKENDS)
def test_ring_ps_native_reduce_on_the_back_end(name):
    """The driver's cases on 3 ranks; on a GPU also bitwise equal to the NumPy back-end."""
    from pathlib import Path

    from mpirun import mpirun_command, run_command

    driver = Path(__file__).parent / "drivers" / "backend_reduce.py"
    job = run_command(mpirun_command() + ["-n", "3", sys.executable, str(driver), "--device", DEVICE_OF[name]],
                      timeout=240)
    assert job.returncode == 0 and f"on {name}" in job.stdout, job.text


@pytest.mark.mpi
@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("strategy", ["ring", "ps"])
def test_training_on_the_back_end_holds_every_invariant(tmp_path, name, strategy):
    from mpirun import run_mpi

    out = tmp_path / strategy
    job = run_mpi(2, ["run", "--strategy", strategy, "--device", DEVICE_OF[name], "--steps", "6",
                      "--bucket-bytes", "256"], out=out, timeout=180)
    assert job.returncode == 0, job.text
    checks = job.csv("invariants.csv")
    # The content decides, not the launcher's status: every step checked, every check passed.
    assert sorted(set(checks["step"])) == list(range(6)), job.text
    assert (checks["passed"].astype(str).str.lower() == "true").all(), job.text
    assert json.loads((out / "run.json").read_text())["device"]["backend"] == name
