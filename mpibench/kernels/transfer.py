"""How a buffer that may live in GPU memory is handed to MPI.

Host buffers (NumPy) always go to MPI as they are. A device buffer (anything
exposing ``__cuda_array_interface__``, e.g. a CuPy array) takes one of two
paths, decided once per process and never switched silently:

``cuda-aware``
    The MPI library reads and writes device memory itself. The buffer goes to
    MPI directly, after the current CUDA stream is synchronised so that MPI
    never races a kernel still writing (or reading) the buffer.
``staged``
    The MPI library only understands host memory. An outgoing device buffer is
    copied into a pinned host buffer first; an incoming one is received into a
    pinned host buffer and copied to the device once the request completes.
    Pinned buffers come from a pool: allocated once per size, reused after, so
    the steady state allocates nothing.

Whether MPI is CUDA-aware is asked of the library (Open MPI's
``MPIX_Query_cuda_support``, MPICH's ``MPIX_GPU_query_support``; mpi4py does
not wrap either, so they are called through ``ctypes``) unless
``MPIBENCH_CUDA_AWARE=0|1`` overrides it. The answer and how it was obtained
go into ``run.json``, and the number of device buffers each path moved goes
into the run's summary line.

A transfer hands the communicator the buffer MPI should use and a ``done``
callable (or ``None``) to run once the MPI request has completed.

The device itself is reached through the back-end's runtime (``attach``): the
CuPy runtime on a GPU, or the strict emulated one (:mod:`.emulated`), which
raises when MPI would read a device buffer with work still queued on it, or a
staging buffer a copy has not finished with. ``counts`` tallies the device
buffers handed to MPI: ``out``/``out_bytes`` for MPI to read, ``in``/``in_bytes``
for MPI to write, whichever path.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections import Counter
from typing import Callable

import numpy as np

HOST, CUDA_AWARE, STAGED = "host", "cuda-aware", "staged"
OVERRIDE_ENV = "MPIBENCH_CUDA_AWARE"
Done = Callable[[], None] | None


def is_device(buf, device=None) -> bool:
    """True for a device array: one of ``device``'s, or any exposing the CUDA array interface."""
    if isinstance(buf, (list, tuple)) and buf and (
            hasattr(buf[0], "__cuda_array_interface__") or (device is not None and device.is_device(buf[0]))):
        # A [buffer, datatype] spec would hide the device pointer from the staging logic.
        raise TypeError("pass device buffers to the communicator as arrays, not as [buffer, type] specs")
    if device is not None and device.is_device(buf):
        return True
    return hasattr(buf, "__cuda_array_interface__")


# ----------------------------------------------------------------------------- detection
def _loaded_mpi_library() -> ctypes.CDLL | None:
    """The libmpi this process already loaded (through mpi4py), if it can be found."""
    from mpi4py import MPI  # noqa: F401 - makes sure the library is loaded

    paths = []
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "/libmpi" in line and ".so" in line})
    except OSError:
        pass
    found = ctypes.util.find_library("mpi")
    for path in [p for p in paths if "/libmpi.so" in p or "/libmpi_" in p] + ([found] if found else []):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def cuda_aware_mpi() -> tuple[bool, str]:
    """``(aware, probe)``: can MPI move device buffers, and how that was found out."""
    forced = os.environ.get(OVERRIDE_ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1", f"{OVERRIDE_ENV}={forced} in the environment"
    lib = _loaded_mpi_library()
    if lib is not None and hasattr(lib, "MPIX_Query_cuda_support"):
        query = lib.MPIX_Query_cuda_support
        query.restype = ctypes.c_int
        answer = query()
        return answer == 1, f"MPIX_Query_cuda_support() returned {answer}"
    if lib is not None and hasattr(lib, "MPIX_GPU_query_support"):
        flag = ctypes.c_int(0)
        lib.MPIX_GPU_query_support(ctypes.c_int(0), ctypes.byref(flag))  # 0: MPIX_GPU_SUPPORT_CUDA
        return flag.value == 1, f"MPIX_GPU_query_support(CUDA) set {flag.value}"
    return False, "the MPI library offers no CUDA-support query: assumed host-only"


# ----------------------------------------------------------------------------- pinned pool
class PinnedPool:
    """Page-locked host buffers, reused by best fit; grows only when all are busy."""

    ALIGN_BYTES = 4096

    def __init__(self, allocate=None):
        self._free: list[np.ndarray] = []  # uint8 arrays in pinned memory
        self.allocated_bytes = 0
        self._allocate_pinned = allocate  # (length, dtype) -> page-locked host array

    def reserve(self, nbytes: int, copies: int = 2) -> None:
        """Make sure ``copies`` free buffers of at least ``nbytes`` exist (allocate now, not mid-step)."""
        fitting = sum(1 for b in self._free if b.nbytes >= nbytes)
        for _ in range(copies - fitting):
            self._free.append(self._allocate(nbytes))

    def take(self, nbytes: int) -> np.ndarray:
        fitting = [i for i, b in enumerate(self._free) if b.nbytes >= nbytes]
        if not fitting:
            return self._allocate(nbytes)
        best = min(fitting, key=lambda i: self._free[i].nbytes)
        return self._free.pop(best)

    def give(self, buf: np.ndarray) -> None:
        self._free.append(buf)

    def _allocate(self, nbytes: int) -> np.ndarray:
        size = max(self.ALIGN_BYTES, -(-nbytes // self.ALIGN_BYTES) * self.ALIGN_BYTES)
        if self._allocate_pinned is None:
            import cupyx

            buf = cupyx.empty_pinned(size, dtype=np.uint8)
        else:
            buf = self._allocate_pinned(size, np.uint8)
        self.allocated_bytes += size
        return buf


# ----------------------------------------------------------------------------- the policy
class Transfer:
    """Hands buffers to MPI: host ones as they are, device ones by ``device_path``."""

    def __init__(self, device_path: str | None = None, probe: str = "", device=None):
        self._device_path = device_path
        self._probe = probe
        self.device = None  # the runtime of the device back-end in use (see attach)
        self.pool = PinnedPool()
        self.moved = Counter()  # path -> device buffers handed to MPI that way
        self.counts = Counter()  # out, out_bytes, in, in_bytes: device buffers MPI read / wrote
        if device is not None:
            self.attach(device)

    def attach(self, device) -> None:
        """Move device buffers with ``device`` (a runtime: CuPy's or the emulated one)."""
        self.device = device
        self.pool._allocate_pinned = device.pinned_empty

    @property
    def device_path(self) -> str:
        """``cuda-aware`` or ``staged``; asked of the MPI library on first use."""
        if self._device_path is None:
            aware, self._probe = cuda_aware_mpi()
            self._device_path = CUDA_AWARE if aware else STAGED
        return self._device_path

    def describe(self) -> dict:
        path = self.device_path
        # No pinned-pool size here: run.json is written before any device buffer
        # (and so any staging space) exists, and would always have said 0.
        return {"device_path": path, "cuda_aware": path == CUDA_AWARE, "probe": self._probe}

    def reserve(self, nbytes: int) -> None:
        """Called when a device buffer is allocated: its staging space is made now."""
        if self.device_path == STAGED:
            self.pool.reserve(nbytes)

    # -- the three directions. Each returns (what MPI gets, what to run after completion).
    def outgoing(self, buf):
        if not is_device(buf, self.device):
            self._host_ready(buf, writing=False)
            return buf, None
        self._count("out", buf)
        return self._outgoing_device(buf)

    def incoming(self, buf):
        if not is_device(buf, self.device):
            self._host_ready(buf, writing=True)
            return buf, None
        self._count("in", buf)
        return self._incoming_device(buf, copy_in=False)

    def both(self, buf):
        """A buffer MPI reads and then overwrites (``Bcast``)."""
        if not is_device(buf, self.device):
            self._host_ready(buf, writing=True)
            return buf, None
        self._count("out", buf)
        self._count("in", buf)
        return self._incoming_device(buf, copy_in=True)

    def _count(self, direction: str, buf) -> None:
        self.counts[direction] += 1
        self.counts[direction + "_bytes"] += int(buf.nbytes)

    def _host_ready(self, host, writing: bool) -> None:
        if self.device is not None and isinstance(host, np.ndarray):
            self.device.host_ready(host, writing)

    def _outgoing_device(self, buf):
        device = self.device
        if self.device_path == CUDA_AWARE:
            self.moved[CUDA_AWARE] += 1
            device.synchronize()  # MPI must never read a buffer a kernel is still writing
            return device.mpi_handle(buf), None
        self.moved[STAGED] += 1
        pinned = self.pool.take(buf.nbytes)
        host = _view(pinned, buf)
        device.download(buf, host, blocking=False)
        device.synchronize()  # MPI reads ``host`` as soon as the call is made
        self._host_ready(host, writing=False)
        return host, lambda: self.pool.give(pinned)

    def _incoming_device(self, buf, copy_in: bool):
        device = self.device
        if self.device_path == CUDA_AWARE:
            self.moved[CUDA_AWARE] += 1
            device.synchronize()  # no kernel may still read the buffer MPI is about to write
            return device.mpi_handle(buf), None
        self.moved[STAGED] += 1
        pinned = self.pool.take(buf.nbytes)
        host = _view(pinned, buf)
        if copy_in:
            device.download(buf, host, blocking=False)
            device.synchronize()
        self._host_ready(host, writing=True)

        def land():
            device.upload(buf, host)
            # The pinned buffer is free again only once the copy has read it.
            device.synchronize()
            self.pool.give(pinned)

        return host, land


def _view(pinned: np.ndarray, like) -> np.ndarray:
    """The first ``like.nbytes`` of a pinned byte buffer, typed and shaped like ``like``."""
    return pinned[:like.nbytes].view(like.dtype).reshape(like.shape)


@functools.cache
def process_transfer() -> Transfer:
    """The one transfer policy of this process (so counters and pinned memory are shared)."""
    return Transfer()
