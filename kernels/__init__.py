"""Array back-ends and the few reduction kernels the sync strategies call.

A back-end owns where gradient buffers live (host memory with NumPy, device
memory with CuPy) and the fused operations on them. Strategies call only
these operations, so the same strategy code runs on either.
"""
from .backend import Backend, select_backend
from .numpy_backend import NumpyBackend

__all__ = ["Backend", "NumpyBackend", "select_backend"]
