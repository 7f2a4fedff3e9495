"""The back-end interface, and the choice between back-ends for ``--device``."""
from __future__ import annotations

from typing import Protocol

import numpy as np

DEVICES = ("cpu", "gpu", "auto", "emulated")


class BackendError(ValueError):
    """A device that cannot be chosen. The kernels know nothing of the command line:
    the job layer that asked for the device reports this as bad usage (exit 2)."""


class DeviceUnavailable(BackendError, RuntimeError):
    """``--device gpu`` where no GPU can be used: bad usage, reported in one line."""


class Backend(Protocol):
    """What a strategy may do with a buffer, whatever memory it lives in."""

    name: str
    xp: object  # the array module: numpy or cupy
    transfer: object  # how MPI gets this back-end's buffers (see .transfer)
    info: dict  # what run.json records about the choice

    def empty(self, length: int, dtype=np.float32): ...

    def zeros(self, length: int, dtype=np.float32): ...

    def to_host(self, array) -> np.ndarray: ...

    def from_host(self, array: np.ndarray): ...

    def load(self, dst, src) -> None:
        """Copy ``src`` (a host array or one of this back-end's) into the buffer ``dst``."""

    def download(self, src, dst: np.ndarray) -> None:
        """Copy the buffer ``src`` into the existing host array ``dst`` (blocking)."""

    def counters(self) -> dict | None:
        """Host/device copies and MPI hand-overs so far; ``None`` for host memory."""

    def accumulate(self, dst, src) -> None:
        """``dst += src`` in place (a received segment into the local one)."""

    def pack(self, buf, grad_sum, count: int) -> None:
        """Write ``[grad_sum..., count]`` into the step buffer."""

    def apply_update(self, params, grad_sum, count, lr: float) -> None:
        """``params -= lr * grad_sum / count`` in place; no update when ``count`` is 0.

        ``grad_sum`` is consumed: its contents afterwards are unspecified.
        """

    def synchronize(self) -> None: ...


def select_backend(device: str = "cpu") -> Backend:
    """The back-end for ``--device cpu|gpu|auto|emulated``, with ``info`` saying what was chosen and why.

    ``auto`` takes the GPU only when CuPy imports and a device is visible, and
    records the reason when it does not. ``gpu`` without one raises
    :class:`DeviceUnavailable`: never a silent fallback. ``emulated`` is the
    strict stand-in for a GPU (:mod:`.emulated`): the device code path on host
    memory, every implicit host/device crossing an error.
    """
    from .numpy_backend import NumpyBackend

    if device not in DEVICES:
        raise BackendError(f"unknown device {device!r} (cpu, gpu, auto or emulated)")
    if device == "emulated":
        from .device_backend import DeviceBackend
        from .emulated import process_runtime

        return DeviceBackend(process_runtime(), "emulated")
    reason = None
    if device != "cpu":
        from .cupy_backend import CupyBackend, gpu_available

        reason = gpu_available()
        if reason is None:
            return CupyBackend(requested=device)
        if device == "gpu":
            raise DeviceUnavailable(f"--device gpu: {reason}")
    backend = NumpyBackend()
    backend.info = {"requested": device, "backend": backend.name, "transfer": "host",
                    "fallback": f"no GPU, using the CPU: {reason}" if reason else None}
    return backend
