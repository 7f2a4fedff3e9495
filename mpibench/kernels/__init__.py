"""Array back-ends and the few reduction kernels the sync strategies call.

A back-end owns where gradient buffers live (host memory with NumPy, device
memory with CuPy) and the fused operations on them. Strategies call only
these operations, so the same strategy code runs on either. How MPI moves a
device buffer (directly, or staged through pinned host memory) is the
back-end's ``transfer`` policy, applied by the communicator.

Device back-ends share one implementation (:mod:`.device_backend`) over a
small runtime: CuPy's on a GPU, or the strict emulated device
(:mod:`.emulated`, ``--device emulated``) on which CI runs the device path and
every implicit host/device crossing raises.
"""
from .backend import DEVICES, Backend, BackendError, DeviceUnavailable, select_backend
from .counts import TransferCounts, transfer_counts
from .emulated import CrossingError
from .numpy_backend import NumpyBackend
from .transfer import Transfer, process_transfer

__all__ = ["DEVICES", "Backend", "BackendError", "CrossingError", "DeviceUnavailable", "NumpyBackend",
           "Transfer", "TransferCounts", "process_transfer", "select_backend", "transfer_counts"]
