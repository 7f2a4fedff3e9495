"""The back-end interface and the choice between back-ends."""
from __future__ import annotations

from typing import Protocol

import numpy as np


class Backend(Protocol):
    """What a strategy may do with a buffer, whatever memory it lives in."""

    name: str

    def empty(self, length: int, dtype=np.float32): ...

    def zeros(self, length: int, dtype=np.float32): ...

    def to_host(self, array) -> np.ndarray: ...

    def from_host(self, array: np.ndarray): ...

    def accumulate(self, dst, src) -> None:
        """``dst += src`` in place (a received segment into the local one)."""

    def pack(self, buf, grad_sum, count: int) -> None:
        """Write ``[grad_sum..., count]`` into the step buffer."""

    def apply_update(self, params, grad_sum, count, lr: float) -> None:
        """``params -= lr * grad_sum / count`` in place; ``grad_sum`` is consumed."""

    def synchronize(self) -> None: ...


def select_backend(device: str = "cpu") -> Backend:
    """The back-end for ``--device cpu|gpu|auto``.

    ``auto`` takes the GPU only when CuPy imports and a device is visible;
    ``gpu`` without one is an error, never a silent fallback.
    """
    from .numpy_backend import NumpyBackend

    if device == "cpu":
        return NumpyBackend()
    if device in ("gpu", "auto"):
        try:
            from .cupy_backend import CupyBackend, gpu_available
        except ImportError as exc:
            if device == "gpu":
                raise RuntimeError(f"--device gpu needs CuPy: {exc}") from None
            return NumpyBackend()
        reason = gpu_available()
        if reason is None:
            return CupyBackend()
        if device == "gpu":
            raise RuntimeError(f"--device gpu: {reason}")
        return NumpyBackend()
    raise ValueError(f"unknown device {device!r} (cpu, gpu or auto)")
