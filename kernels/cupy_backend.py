"""Device back-end: the step buffer lives in GPU memory and is reduced by fused CuPy kernels.

Where things live. The model is small and computes on the host in NumPy (the
float64 reference route stays on the CPU too), so with this back-end only the
synchronisation runs on the device: ``pack`` copies the host gradient sum and
the sample count into the device step buffer, the strategy reduces that buffer
on the device (received segments are accumulated by a kernel; MPI moves device
buffers as :mod:`.transfer` decides), and ``apply_update`` applies the mean
update. Host parameters are mirrored for the update: uploaded, updated by the
kernel, downloaded. Parameters already on the device are updated in place.

One pass each. Every hot-path operation is one kernel launch that reads and
writes each element once:

- ``accumulate``: ``dst += src`` (a received segment into the local one);
- ``apply_update``: ``param -= (grad / count) * lr``, with ``count`` read from
  device memory (the last slot of the reduced buffer, so no host round trip),
  and a zero count leaving the parameters untouched;
- ``pack``: ``buf[i] = grad[i]`` for ``i < n`` and ``buf[n] = count``, for a
  gradient already on the device; a host gradient is packed into a pinned
  staging buffer and copied up in one transfer.

Same bits as NumPy. The kernels are compiled with ``--fmad=false``: no
multiply-add contraction, so each operation rounds once, exactly as NumPy's
float32 ``divide``, ``multiply`` and ``subtract`` do. The two back-ends then
give bitwise-identical results, and the tests compare them with ``==``.
"""
from __future__ import annotations

import functools
import os

import numpy as np

from .transfer import process_transfer

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


class CupyBackend:
    """Buffers in device memory; the fused kernels above on the hot path."""

    name = "cupy"

    def __init__(self, device_id: int | None = None):
        if cupy is None:
            raise RuntimeError(gpu_available())
        self.xp = cupy
        count = cupy.cuda.runtime.getDeviceCount()
        # Ranks sharing a host spread over its devices; several ranks may share one.
        self.device_id = local_rank() % count if device_id is None else device_id
        cupy.cuda.Device(self.device_id).use()
        self.transfer = process_transfer()
        self.k = kernels()
        self._staging: dict[int, tuple[np.ndarray, object]] = {}  # length -> (pinned, event)
        self._mirror = None  # device copy of host parameters for the update

    # -- allocation
    def empty(self, length: int, dtype=np.float32):
        buf = cupy.empty(length, dtype=dtype)
        self.transfer.reserve(buf.nbytes)
        return buf

    def zeros(self, length: int, dtype=np.float32):
        buf = cupy.zeros(length, dtype=dtype)
        self.transfer.reserve(buf.nbytes)
        return buf

    def to_host(self, array) -> np.ndarray:
        return cupy.asnumpy(array)

    def from_host(self, array: np.ndarray):
        return cupy.asarray(array)

    # -- the hot path
    def accumulate(self, dst, src) -> None:
        self.k.accumulate(src, dst)

    def pack(self, buf, grad_sum, count: int) -> None:
        n = len(buf) - 1
        if isinstance(grad_sum, cupy.ndarray):
            self.k.pack(grad_sum, np.int64(n), buf.dtype.type(count), buf)
            return
        staging, copied = self._staging_for(len(buf), buf.dtype)
        if copied is not None:
            copied.synchronize()  # the previous step's upload has finished reading it
        staging[:-1] = grad_sum
        staging[-1] = count
        stream = cupy.cuda.get_current_stream()
        buf.set(staging, stream=stream)
        self._staging[len(buf)] = (staging, stream.record())

    def apply_update(self, params, grad_sum, count, lr: float) -> None:
        """``params -= lr * grad_sum / count`` in one pass; no update when ``count`` is 0."""
        if isinstance(params, cupy.ndarray):
            self._apply_on_device(params, grad_sum, count, lr)
            return
        target = self._mirror_of(params)
        self._apply_on_device(target, grad_sum, count, lr)
        target.get(out=params)  # blocking: the host parameters are current on return

    def synchronize(self) -> None:
        cupy.cuda.get_current_stream().synchronize()

    # -- helpers
    def _apply_on_device(self, params, grad_sum, count, lr) -> None:
        lr_t = params.dtype.type(lr)
        if isinstance(count, cupy.ndarray):
            self.k.apply_device_count(grad_sum, count.reshape(1), lr_t, params)
            return
        if count == 0:
            return  # nothing contributed: no update
        self.k.apply_host_count(grad_sum, params.dtype.type(count), lr_t, params)

    def _mirror_of(self, params: np.ndarray):
        if self._mirror is None or len(self._mirror) < len(params) or self._mirror.dtype != params.dtype:
            self._mirror = cupy.empty(len(params), dtype=params.dtype)
        target = self._mirror[:len(params)]
        target.set(np.ascontiguousarray(params))
        return target

    def _staging_for(self, length: int, dtype):
        if length not in self._staging:
            import cupyx

            self._staging[length] = (cupyx.empty_pinned(length, dtype=dtype), None)
        return self._staging[length]

    def describe(self) -> dict:
        props = cupy.cuda.runtime.getDeviceProperties(self.device_id)
        name = props.get("name", b"")
        return {"device_id": self.device_id,
                "device_name": name.decode() if isinstance(name, bytes) else str(name),
                "device_memory_bytes": int(props.get("totalGlobalMem", 0)),
                "cupy": cupy.__version__,
                "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
                **self.transfer.describe()}
