"""The CuPy runtime: device memory, streams, copies and fused kernels on a real GPU.

This is the thin, GPU-only layer under :class:`.device_backend.DeviceBackend`
(which holds the logic of where buffers live and when they cross); the
emulated runtime in :mod:`.emulated` has the same methods, so CI runs that
logic without a GPU.

One pass each. Every hot-path operation is one kernel launch that reads and
writes each element once:

- ``accumulate``: ``dst += src`` (a received segment into the local one);
- ``apply``: ``param -= (grad / count) * lr``, with ``count`` read from
  device memory (the last slot of the reduced buffer, so no host round trip),
  and a zero count leaving the parameters untouched;
- ``pack``: ``buf[i] = grad[i]`` for ``i < n`` and ``buf[n] = count``, for a
  gradient already on the device.

Same bits as NumPy. The kernels are compiled with ``--fmad=false``: no
multiply-add contraction, so each operation rounds once, exactly as NumPy's
float32 ``divide``, ``multiply`` and ``subtract`` do. The back-ends then give
bitwise-identical results, and the tests compare them with ``==``, with one
exception: CuPy always compiles with ``-ftz=true`` after the caller's options
(cupy/cupy#9576), so a result that would be subnormal is zero on the GPU (seen
on an H200: 0 - 0.5 * 1.1754944e-38 gave 0, NumPy -5.877472e-39). Replicas stay
bitwise identical across ranks, and the checker's tolerance is far above it.
"""
from __future__ import annotations

import functools
import os
from collections import Counter

import numpy as np

from .device_backend import DeviceBackend

try:
    import cupy
except ImportError as exc:  # the `gpu` extra is optional
    cupy = None
    _IMPORT_ERROR = str(exc)
else:
    _IMPORT_ERROR = ""

# No fused multiply-add: keeps every rounding identical to NumPy's.
EXACT_OPTIONS = ("--fmad=false",)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def gpu_available() -> str | None:
    """``None`` when CuPy imports and a CUDA device is visible, else the reason why not."""
    if cupy is None:
        return f"CuPy is not installed ({_IMPORT_ERROR}; pip install -e '.[gpu]')"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - any CUDA failure means no usable device
        return f"no usable CUDA device ({_first_line(exc)})"
    if count < 1:
        return "no CUDA device visible"
    return None


def local_rank() -> int:
    """This process's index among the ranks on its host, from the launcher."""
    for name in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


class _Kernels:
    """The fused kernels, defined once per process (compiled by CuPy on first launch)."""

    def __init__(self):
        ek = cupy.ElementwiseKernel
        self.accumulate = ek("T src", "T dst", "dst = dst + src", "mpibench_accumulate",
                             options=EXACT_OPTIONS)
        # ``total`` is the reduced count still in device memory: read there, never copied back.
        self.apply_device_count = ek(
            "T grad, raw T total, T lr", "T param",
            "const T n = total[0]; if (n != (T)0) { param = param - (grad / n) * lr; }",
            "mpibench_apply_update", options=EXACT_OPTIONS)
        self.apply_host_count = ek(
            "T grad, T n, T lr", "T param", "param = param - (grad / n) * lr",
            "mpibench_apply_update_host_count", options=EXACT_OPTIONS)
        # Runs over the n + 1 slots of the step buffer; ``i`` is the element index.
        self.pack = ek("raw T grad, int64 n, T count", "T buf", "buf = (i < n) ? grad[i] : count",
                       "mpibench_pack", options=EXACT_OPTIONS)


@functools.cache
def kernels() -> _Kernels:
    """The compiled kernels, built once per process on first use."""
    return _Kernels()


class CupyRuntime:
    """Device memory and the current stream of one GPU, with every host/device copy counted."""

    name = "cupy"

    def __init__(self, device_id: int | None = None):
        if cupy is None:
            raise RuntimeError(gpu_available())
        self.xp = cupy
        count = cupy.cuda.runtime.getDeviceCount()
        # Ranks sharing a host spread over its devices; several ranks may share one.
        self.device_id = local_rank() % count if device_id is None else device_id
        cupy.cuda.Device(self.device_id).use()
        self.k = kernels()
        self.copies = Counter()  # h2d, h2d_bytes, d2h, d2h_bytes, sync

    def is_device(self, x) -> bool:
        return isinstance(x, cupy.ndarray)

    # -- allocation
    def empty(self, length: int, dtype=np.float32):
        return cupy.empty(length, dtype=dtype)

    def zeros(self, length: int, dtype=np.float32):
        return cupy.zeros(length, dtype=dtype)

    def pinned_empty(self, length: int, dtype=np.uint8) -> np.ndarray:
        import cupyx

        return cupyx.empty_pinned(length, dtype=dtype)

    # -- the stream
    def synchronize(self) -> None:
        self.copies["sync"] += 1
        cupy.cuda.get_current_stream().synchronize()

    def record(self):
        return cupy.cuda.get_current_stream().record()

    # -- copies
    def to_host(self, array) -> np.ndarray:
        self._count("d2h", array.nbytes)
        return cupy.asnumpy(array)

    def from_host(self, array: np.ndarray):
        self._count("h2d", array.nbytes)
        return cupy.asarray(array)

    def upload(self, dst, host: np.ndarray) -> None:
        """Host to an existing device buffer, on the current stream (asynchronous from pinned memory)."""
        self._count("h2d", host.nbytes)
        dst.set(host, stream=cupy.cuda.get_current_stream())

    def download(self, src, host: np.ndarray, blocking: bool = True) -> None:
        self._count("d2h", src.nbytes)
        src.get(out=host, stream=cupy.cuda.get_current_stream(), blocking=blocking)

    def _count(self, kind: str, nbytes: int) -> None:
        self.copies[kind] += 1
        self.copies[kind + "_bytes"] += int(nbytes)

    # -- what MPI may see
    def mpi_handle(self, buf):
        return buf  # a CUDA-aware MPI reads the device pointer itself

    def host_ready(self, host: np.ndarray, writing: bool) -> None:
        pass  # the stream was synchronised by the transfer policy; nothing to check on a GPU

    # -- kernels
    def accumulate(self, dst, src) -> None:
        self.k.accumulate(src, dst)

    def pack(self, buf, grad, count) -> None:
        self.k.pack(grad, np.int64(len(buf) - 1), buf.dtype.type(count), buf)

    def apply(self, params, grad, count, lr: float) -> None:
        lr_t = params.dtype.type(lr)
        if isinstance(count, cupy.ndarray):
            self.k.apply_device_count(grad, count.reshape(1), lr_t, params)
        else:
            self.k.apply_host_count(grad, params.dtype.type(count), lr_t, params)

    def describe(self) -> dict:
        props = cupy.cuda.runtime.getDeviceProperties(self.device_id)
        name = props.get("name", b"")
        return {"device_id": self.device_id,
                "device_name": name.decode() if isinstance(name, bytes) else str(name),
                "device_memory_bytes": int(props.get("totalGlobalMem", 0)),
                "cupy": cupy.__version__,
                "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion()}


def CupyBackend(device_id: int | None = None, requested: str = "gpu") -> DeviceBackend:
    """The device back-end on this process's GPU."""
    return DeviceBackend(CupyRuntime(device_id), requested)
