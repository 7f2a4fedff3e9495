"""The emulated device's array type, and the error every implicit crossing raises.

A :class:`DeviceArray` shows its shape and dtype but never its values: every
way NumPy, Python or MPI could read or write them implicitly raises
:class:`CrossingError`, naming the file and line of the crossing (the innermost
caller outside the device layer). Views and device-side copies and fills are
allowed; they are queued on the owning runtime's stream (see :mod:`.emulated`).
"""
from __future__ import annotations

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
# The device layer: a crossing is named at its caller (the back-end op it went through is shown too).
_DEVICE_LAYER = tuple(os.path.join(_HERE, name) for name in
                      ("device_array.py", "emulated.py", "device_backend.py", "transfer.py"))
_ARRAY_LAYER = tuple(os.path.join(_HERE, name) for name in ("device_array.py", "emulated.py"))


class CrossingError(TypeError):
    """Device memory met host code (or the reverse) outside the explicit doors."""


def _where(frame) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno} (in {frame.f_code.co_name})"


def _crossing_site() -> str:
    """``file:line (function)`` of the innermost frame outside the device layer."""
    frame, via = sys._getframe(1), None
    while frame is not None and os.path.abspath(frame.f_code.co_filename) in _DEVICE_LAYER:
        if os.path.abspath(frame.f_code.co_filename) not in _ARRAY_LAYER:
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

    def __init__(self, runtime, data: np.ndarray):
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
