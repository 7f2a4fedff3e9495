"""Device back-end: the step buffer lives in device memory and is reduced by fused kernels.

One implementation for every device. What differs between a real GPU (CuPy)
and the strict emulated device used in CI is a small *runtime*: allocation,
the in-order stream (``synchronize``, ``record``), the explicit host/device
copies (``to_host``, ``from_host``, ``upload``, ``download``, each counted in
``runtime.copies``), page-locked host memory, and three kernels
(``accumulate``, ``pack``, ``apply``). Everything above it, where buffers
live and when they cross, is this file, so CI exercises the very code a GPU
runs.

Where things live. The model is small and computes on the host in NumPy (the
float64 reference route stays on the CPU too), so only the synchronisation
runs on the device: ``pack`` copies the host gradient sum and the sample count
into the device step buffer through a pinned staging buffer (one upload), the
strategy reduces that buffer on the device (MPI moves device buffers as
:mod:`.transfer` decides), and ``apply_update`` applies the mean update with
the count read in device memory (the reduced buffer's last slot: no host round
trip). Host parameters are mirrored for the update: uploaded, updated by the
kernel, downloaded (blocking, so they are current on return). Parameters
already on the device are updated in place.

Per step and rank, the compute side therefore crosses: one upload of the step
buffer, one upload and one download of the parameters, one download of the
4-byte count for the records; the parameter server adds one upload of each
served slice and one download of the pulled buffer. The transfer policy adds
its own copies for MPI (see :mod:`.transfer`).
"""
from __future__ import annotations

import numpy as np

from .transfer import process_transfer


class DeviceBackend:
    """Buffers in device memory; the runtime's fused kernels on the hot path."""

    def __init__(self, runtime, requested: str | None = None):
        self.rt = runtime
        self.name = runtime.name
        self.xp = getattr(runtime, "xp", None)
        self.requested = requested or runtime.name
        self.transfer = process_transfer()
        self.transfer.attach(runtime)
        self._staging: dict[int, tuple[np.ndarray, object]] = {}  # length -> (pinned, event)
        self._mirror = None  # device copy of host parameters for the update

    @property
    def info(self) -> dict:
        """What run.json records: read when asked, so the pinned bytes are current."""
        return {"requested": self.requested, "backend": self.name, "fallback": None,
                "transfer": self.transfer.device_path, **self.describe()}

    # -- allocation and the doors
    def empty(self, length: int, dtype=np.float32):
        buf = self.rt.empty(length, dtype)
        self.transfer.reserve(buf.nbytes)
        return buf

    def zeros(self, length: int, dtype=np.float32):
        buf = self.rt.zeros(length, dtype)
        self.transfer.reserve(buf.nbytes)
        return buf

    def to_host(self, array) -> np.ndarray:
        return self.rt.to_host(array)

    def from_host(self, array: np.ndarray):
        return self.rt.from_host(array)

    def load(self, dst, src) -> None:
        """Copy ``src`` (host memory or this device's) into the device buffer ``dst``."""
        if self.rt.is_device(src):
            dst[...] = src
        else:
            self.rt.upload(dst, np.ascontiguousarray(src))

    def download(self, src, dst: np.ndarray) -> None:
        """Copy the device buffer ``src`` into the host array ``dst``; blocking."""
        self.rt.download(src, dst, blocking=True)

    def counters(self) -> dict:
        """Host/device copies and MPI hand-overs so far in this process (see ``TransferCounts``)."""
        return {**{f"copy_{k}": v for k, v in self.rt.copies.items()},
                **{f"mpi_{k}": v for k, v in self.transfer.counts.items()}}

    # -- the hot path
    def accumulate(self, dst, src) -> None:
        self.rt.accumulate(dst, src)

    def pack(self, buf, grad_sum, count: int) -> None:
        if self.rt.is_device(grad_sum):
            self.rt.pack(buf, grad_sum, count)
            return
        staging, copied = self._staging_for(len(buf), buf.dtype)
        if copied is not None:
            copied.synchronize()  # the previous step's upload has finished reading it
        staging[:-1] = grad_sum
        staging[-1] = count
        self.rt.upload(buf, staging)  # asynchronous: staging is pinned
        self._staging[len(buf)] = (staging, self.rt.record())

    def apply_update(self, params, grad_sum, count, lr: float) -> None:
        """``params -= lr * grad_sum / count`` in one pass; no update when ``count`` is 0."""
        if self.rt.is_device(params):
            self._apply_on_device(params, grad_sum, count, lr)
            return
        target = self._mirror_of(params)
        self._apply_on_device(target, grad_sum, count, lr)
        self.rt.download(target, params, blocking=True)  # host parameters current on return

    def synchronize(self) -> None:
        self.rt.synchronize()

    # -- helpers
    def _apply_on_device(self, params, grad_sum, count, lr) -> None:
        if not self.rt.is_device(count) and count == 0:
            return  # nothing contributed: no update (a device count is tested by the kernel)
        self.rt.apply(params, grad_sum, count, lr)

    def _mirror_of(self, params: np.ndarray):
        if self._mirror is None or len(self._mirror) < len(params) or self._mirror.dtype != params.dtype:
            self._mirror = self.rt.empty(len(params), params.dtype)
        target = self._mirror[:len(params)]
        self.rt.upload(target, np.ascontiguousarray(params))
        return target

    def _staging_for(self, length: int, dtype):
        if length not in self._staging:
            self._staging[length] = (self.rt.pinned_empty(length, dtype), None)
        return self._staging[length]

    def describe(self) -> dict:
        return {**self.rt.describe(), **self.transfer.describe()}
