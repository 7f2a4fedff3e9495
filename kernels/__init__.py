"""Array back-ends and the few reduction kernels the sync strategies call.

A back-end owns where gradient buffers live (host memory with NumPy, device
memory with CuPy) and the fused operations on them. Strategies call only
these operations, so the same strategy code runs on either. How MPI moves a
device buffer (directly, or staged through pinned host memory) is the
back-end's ``transfer`` policy, applied by the communicator.
"""
from .backend import Backend, DeviceUnavailable, select_backend
from .numpy_backend import NumpyBackend
from .transfer import Transfer, process_transfer

__all__ = ["Backend", "DeviceUnavailable", "NumpyBackend", "Transfer", "process_transfer",
           "select_backend"]
