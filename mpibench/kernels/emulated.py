"""A strict emulated device: GPU semantics on host memory, every implicit crossing an error.

What it is for. The CuPy path needs a GPU, which CI does not have. This
runtime stands in for one: :class:`DeviceArray` is its own type (not a NumPy
array) backed by host memory, device work is queued on an in-order stream and
runs only when something synchronises, and the only ways between host and
device are the explicit doors below, each counted. Code that would only work
by accident on a real device fails here, loudly, at the line that did it:

- NumPy on a device array (ufuncs, ``np.asarray``, ``__array__``, arithmetic,
  iteration, ``float()``/``int()``), pickling one, or handing one to MPI
  (mpi4py probes ``__dlpack__``) raises :class:`CrossingError`;
- a host array put into a device array (``dev[...] = host``) or given to a
  device kernel raises;
- MPI given a device buffer with queued work on it (the CUDA-aware door), or a
  host buffer that a queued copy still writes or reads (the staged door),
  raises;
- a missing synchronise shows up as stale values, because queued work has not
  run: the invariants then name the step.

Each error names the file and line of the crossing: the innermost caller
outside this module.

The doors, counted in ``copies``: ``to_host`` and ``download`` (device to
host), ``from_host`` and ``upload`` (host to device), ``synchronize``. Copies
from page-locked (pinned) host memory are asynchronous, as with CUDA: the
host buffer is read when the stream reaches the copy; copies from ordinary
host memory read it at once.
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .device_array import CrossingError, DeviceArray, crossing

__all__ = ["CrossingError", "DeviceArray", "EmulatedRuntime", "process_runtime"]

@dataclass
class _Op:
    seq: int
    run: object
    writes: list
    reads: list


class _Event:
    """A point on the stream: waiting for it runs the queued work up to that point."""

    def __init__(self, runtime: "EmulatedRuntime", seq: int):
        self._runtime, self._seq = runtime, seq

    def synchronize(self) -> None:
        self._runtime.run_until(self._seq)


def _overlaps(a: np.ndarray, arrays) -> bool:
    return any(np.may_share_memory(a, b) for b in arrays)


class EmulatedRuntime:
    """The emulated device: allocation, an in-order stream, the doors and the kernels."""

    name = "emulated"

    def __init__(self):
        self.copies = Counter()  # h2d, h2d_bytes, d2h, d2h_bytes, sync
        self._queue: list[_Op] = []
        self._seq = 0
        self._pinned: list[np.ndarray] = []

    # -- allocation
    def is_device(self, x) -> bool:
        return isinstance(x, DeviceArray)

    def check_same(self, x) -> None:
        if not isinstance(x, DeviceArray):
            raise crossing(f"a host {type(x).__name__} given to a device kernel")
        if x._runtime is not self:
            raise crossing("a device array of another emulated device")

    def empty(self, length: int, dtype=np.float32) -> DeviceArray:
        data = np.empty(length, dtype=dtype)
        if data.dtype.kind == "f":
            data.fill(np.nan)  # uninitialised device memory: reading it before writing shows
        return DeviceArray(self, data)

    def zeros(self, length: int, dtype=np.float32) -> DeviceArray:
        return DeviceArray(self, np.zeros(length, dtype=dtype))

    def pinned_empty(self, length: int, dtype=np.uint8) -> np.ndarray:
        buf = np.empty(length, dtype=dtype)
        self._pinned.append(buf)
        return buf

    def is_pinned(self, host: np.ndarray) -> bool:
        return _overlaps(host, self._pinned)

    # -- the stream
    def launch(self, run, writes, reads) -> None:
        self._seq += 1
        self._queue.append(_Op(self._seq, run, list(writes), list(reads)))

    def run_until(self, seq: int) -> None:
        while self._queue and self._queue[0].seq <= seq:
            self._queue.pop(0).run()

    def synchronize(self) -> None:
        self.copies["sync"] += 1
        self.run_until(self._seq)

    def record(self) -> _Event:
        return _Event(self, self._seq)

    def pending_on(self, data: np.ndarray) -> bool:
        return any(_overlaps(data, op.writes) or _overlaps(data, op.reads) for op in self._queue)

    # -- the doors
    def to_host(self, array: DeviceArray) -> np.ndarray:
        """A blocking copy to new host memory (waits for the stream, like ``cupy.asnumpy``)."""
        self.check_same(array)
        self.run_until(self._seq)
        self._count("d2h", array.nbytes)
        return array._data.copy()

    def from_host(self, host: np.ndarray) -> DeviceArray:
        if isinstance(host, DeviceArray):
            raise crossing("from_host given a device array")
        host = np.asarray(host)
        self._count("h2d", host.nbytes)
        return DeviceArray(self, np.array(host, copy=True))

    def upload(self, dst: DeviceArray, host: np.ndarray) -> None:
        """Host to an existing device buffer; from pinned memory asynchronously."""
        self.check_same(dst)
        if isinstance(host, DeviceArray) or not isinstance(host, np.ndarray):
            raise crossing(f"upload given a {type(host).__name__} as the host source")
        if host.shape != dst.shape:
            raise ValueError(f"upload: shapes differ {host.shape} vs {dst.shape}")
        target = dst._data
        source = host if self.is_pinned(host) else host.copy()  # pageable: read now
        self._count("h2d", host.nbytes)
        self.launch(lambda: np.copyto(target, source), writes=[target], reads=[host] if source is host else [])

    def download(self, src: DeviceArray, host: np.ndarray, blocking: bool = True) -> None:
        """An existing device buffer to existing host memory; queued unless ``blocking``."""
        self.check_same(src)
        if isinstance(host, DeviceArray) or not isinstance(host, np.ndarray):
            raise crossing(f"download given a {type(host).__name__} as the host target")
        if host.shape != src.shape:
            raise ValueError(f"download: shapes differ {src.shape} vs {host.shape}")
        source = src._data
        self._count("d2h", src.nbytes)
        self.launch(lambda: np.copyto(host, source), writes=[host], reads=[source])
        if blocking:
            self.run_until(self._seq)

    def _count(self, kind: str, nbytes: int) -> None:
        self.copies[kind] += 1
        self.copies[kind + "_bytes"] += int(nbytes)

    # -- what MPI may see
    def mpi_handle(self, buf: DeviceArray) -> np.ndarray:
        """The CUDA-aware door: the backing memory, only when no queued work touches it."""
        self.check_same(buf)
        if self.pending_on(buf._data):
            raise crossing("MPI given a device buffer with device work still queued on it "
                           "(synchronize before handing it to MPI)")
        return buf._data

    def host_ready(self, host: np.ndarray, writing: bool) -> None:
        """Raise if queued device work still writes ``host`` (or reads it, when MPI will write)."""
        for op in self._queue:
            if _overlaps(host, op.writes) or (writing and _overlaps(host, op.reads)):
                raise crossing("MPI given a host buffer that a queued device copy has not finished "
                               "with (synchronize first)")

    # -- kernels: one queued pass each, rounding as NumPy's float32 operations do
    def accumulate(self, dst: DeviceArray, src: DeviceArray) -> None:
        self.check_same(dst)
        self.check_same(src)
        d, s = dst._data, src._data
        self.launch(lambda: np.add(d, s, out=d), writes=[d], reads=[s])

    def pack(self, buf: DeviceArray, grad: DeviceArray, count) -> None:
        self.check_same(buf)
        self.check_same(grad)
        b, g, c = buf._data, grad._data, buf.dtype.type(count)

        def run():
            b[:-1] = g
            b[-1] = c
        self.launch(run, writes=[b], reads=[g])

    def apply(self, params: DeviceArray, grad: DeviceArray, count, lr: float) -> None:
        """``params -= (grad / count) * lr`` with ``count`` on the device or the host; 0: no update."""
        self.check_same(params)
        self.check_same(grad)
        p, g = params._data, grad._data
        lr_t = p.dtype.type(lr)
        reads = [g]
        if isinstance(count, DeviceArray):
            self.check_same(count)
            total = count._data
            reads.append(total)
        else:
            total = np.asarray(p.dtype.type(count))

        def run():
            n = p.dtype.type(total.reshape(-1)[0])
            if n != 0:
                p[...] = p - (g / n) * lr_t
        self.launch(run, writes=[p], reads=reads)

    def describe(self) -> dict:
        return {"device_name": "emulated (host memory, strict crossings)"}


@functools.cache
def process_runtime() -> EmulatedRuntime:
    """The emulated device of this process: every back-end made for ``--device emulated`` shares
    it, as they would share a GPU, so their buffers, queue and counters are one."""
    return EmulatedRuntime()
