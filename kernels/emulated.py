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
import os
import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

_THIS_FILE = os.path.abspath(__file__)
# The device layer: a crossing is named at its caller (the back-end op it went through is shown too).
_DEVICE_LAYER = (_THIS_FILE, *(os.path.join(os.path.dirname(_THIS_FILE), name)
                               for name in ("device_backend.py", "transfer.py")))


class CrossingError(TypeError):
    """Device memory met host code (or the reverse) outside the explicit doors."""


def _where(frame) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno} (in {frame.f_code.co_name})"


def _crossing_site() -> str:
    """``file:line (function)`` of the innermost frame outside the device layer."""
    frame, via = sys._getframe(1), None
    while frame is not None and os.path.abspath(frame.f_code.co_filename) in _DEVICE_LAYER:
        if os.path.abspath(frame.f_code.co_filename) != _THIS_FILE:
            via = frame
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return _where(frame) + (f", through {_where(via)}" if via is not None else "")


def crossing(what: str) -> CrossingError:
    return CrossingError(f"implicit host/device crossing: {what} at {_crossing_site()}")


def _refuse(what: str):
    def method(self, *args, **kwargs):
        raise crossing(what)
    return method


class DeviceArray:
    """An array in emulated device memory: shape and dtype are visible, values are not."""

    __slots__ = ("_data", "_runtime", "__weakref__")
    __array_priority__ = 1e6  # NumPy defers binary operators to us, and we refuse them

    def __init__(self, runtime: "EmulatedRuntime", data: np.ndarray):
        self._data, self._runtime = data, runtime

    # -- what may be asked without touching the values
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    size = property(lambda self: self._data.size)
    nbytes = property(lambda self: self._data.nbytes)
    ndim = property(lambda self: self._data.ndim)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype})"

    def reshape(self, *shape) -> "DeviceArray":
        return DeviceArray(self._runtime, self._data.reshape(*shape))

    # -- views and device-side copies
    def __getitem__(self, index) -> "DeviceArray":
        if isinstance(index, (DeviceArray, np.ndarray, list)):
            raise crossing("fancy indexing of a device array")
        view = self._data[index]
        if not isinstance(view, np.ndarray):  # an element: keep it a 0-d view, as CuPy does
            i = index if index >= 0 else index + len(self._data)
            view = self._data[i:i + 1].reshape(())
        return DeviceArray(self._runtime, view)

    def __setitem__(self, index, value) -> None:
        # An integer index names one element: a 1-element view, so the write lands in place.
        target = self._data[index:index + 1 or None] if isinstance(index, int) else self._data[index]
        rt = self._runtime
        if isinstance(value, DeviceArray):
            rt.check_same(value)
            source = value._data
            rt.launch(lambda: np.copyto(target, source), writes=[target], reads=[source])
        elif isinstance(value, (np.ndarray, list, tuple)) and np.ndim(value) > 0:
            raise crossing("a host array assigned into a device array (use the back-end's load/upload)")
        elif isinstance(value, (int, float, np.number, np.ndarray)):
            fill = np.asarray(value, dtype=self.dtype)  # a scalar: a fill kernel, as in CuPy
            rt.launch(lambda: target.fill(fill), writes=[target], reads=[])
        else:
            raise crossing(f"{type(value).__name__} assigned into a device array")

    # -- every implicit way to the values
    __array__ = _refuse("a device array read as a NumPy array (np.asarray / __array__)")
    __iter__ = _refuse("iteration over a device array on the host")
    __float__ = _refuse("float() of a device array (an implicit device-to-host copy)")
    __int__ = _refuse("int() of a device array (an implicit device-to-host copy)")
    __index__ = _refuse("a device array used as an index")
    __bool__ = _refuse("the truth value of a device array (an implicit device-to-host copy)")
    __reduce_ex__ = _refuse("a device array pickled (e.g. a lower-case mpi4py call)")
    __dlpack__ = _refuse("a device array handed to MPI or another library outside the transfer policy")
    __dlpack_device__ = _refuse("a device array handed to MPI or another library outside the transfer policy")
    tolist = _refuse("tolist() of a device array")
    tobytes = _refuse("tobytes() of a device array")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise crossing(f"NumPy ufunc {ufunc.__name__} on a device array")

    def __array_function__(self, func, types, args, kwargs):
        raise crossing(f"NumPy function {func.__name__} on a device array")

    # Arithmetic belongs in the back-end's kernels; the operators are refused.
    for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                  "and", "or", "xor", "lt", "le", "gt", "ge"):
        for _form in ("__%s__", "__r%s__", "__i%s__"):
            if _form % _name not in ("__rlt__", "__rle__", "__rgt__", "__rge__",
                                     "__ilt__", "__ile__", "__igt__", "__ige__"):
                locals()[_form % _name] = _refuse(f"operator {_form % _name} on a device array "
                                                  "(device arithmetic goes through the back-end's kernels)")
    __neg__ = _refuse("operator - on a device array")
    __abs__ = _refuse("abs() of a device array")
    del _name, _form

    def __eq__(self, other):
        if isinstance(other, DeviceArray):
            return self is other
        raise crossing("a device array compared with a host value")

    def __ne__(self, other):
        if isinstance(other, DeviceArray):
            return self is not other
        raise crossing("a device array compared with a host value")

    __hash__ = object.__hash__


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
