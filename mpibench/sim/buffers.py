"""Message specifications as mpi4py takes them, turned into typed views of the caller's memory.

mpi4py accepts a buffer alone (its element type read from the buffer's format), ``[buf,
datatype]``, ``[buf, count, datatype]``, ``[buf, (count, displ), datatype]`` and ``[buf, count]``;
the buffer is anything exporting the buffer protocol (NumPy arrays, ``array.array``,
``bytearray``), the DLPack protocol or ``__cuda_array_interface__`` (host memory here). A
:class:`Message` is that specification resolved: the bytes of the whole buffer as a writable
``uint8`` array over the caller's memory, the datatype, the count per block and the
displacement. A specification that does not fit its buffer raises ``ValueError`` as mpi4py
does, before any MPI call. Datatypes here are the predefined ones and indexed blocks of them.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np


class Datatype:
    """A predefined datatype (one NumPy element type), or an indexed block of one."""

    def __init__(self, name: str, char: str | None, base: "Datatype | None" = None, offsets=None):
        self.name, self.base = name, base
        self.dtype = np.dtype(char) if char is not None else None
        self.offsets = None if offsets is None else np.asarray(offsets, dtype=np.int64)  # in base elements
        self.committed, self.freed = base is None, False

    def __repr__(self) -> str:
        return f"<simulated MPI.Datatype {self.name}>"

    def __bool__(self) -> bool:
        return self.dtype is not None

    def element(self) -> np.dtype:
        return self.base.element() if self.base is not None else self.dtype

    def Get_size(self) -> int:
        if self.dtype is None:
            return 0
        return self.dtype.itemsize if self.offsets is None else len(self.offsets) * self.element().itemsize

    def Get_extent(self) -> tuple[int, int]:
        """(lower bound, extent) in bytes, as MPI_Type_get_extent gives them."""
        if self.offsets is None:
            return 0, self.Get_size()
        if not len(self.offsets):
            return 0, 0
        lo, hi = int(self.offsets.min()), int(self.offsets.max()) + 1
        return lo * self.element().itemsize, (hi - lo) * self.element().itemsize

    size = property(Get_size)
    extent = property(lambda self: self.Get_extent()[1])

    def Create_indexed_block(self, blocklength: int, displacements) -> "Datatype":
        offsets = [d * self._items() + j for d in displacements for j in range(blocklength * self._items())]
        return Datatype(f"indexed_block({self.name})", self.element().char, base=self,
                        offsets=[self._at(o) for o in offsets])

    def Create_contiguous(self, count: int) -> "Datatype":
        return self.Create_indexed_block(count, [0])

    def _items(self) -> int:  # base elements in one of this type
        return 1 if self.offsets is None else len(self.offsets)

    def _at(self, item: int) -> int:  # element offset of this type's ``item``-th base element
        if self.offsets is None:
            return item
        span = self.Get_extent()[1] // self.element().itemsize
        return (item // len(self.offsets)) * span + int(self.offsets[item % len(self.offsets)])

    def Commit(self) -> "Datatype":
        self.committed = True
        return self

    def Free(self) -> None:
        self.freed = True

    def Dup(self) -> "Datatype":
        return Datatype(self.name, None if self.dtype is None else self.dtype.char, self.base, self.offsets)


_PREDEFINED = [  # name, NumPy type character
    ("BYTE", "B"), ("PACKED", "B"), ("CHAR", "b"), ("SIGNED_CHAR", "b"), ("UNSIGNED_CHAR", "B"),
    ("SHORT", "h"), ("UNSIGNED_SHORT", "H"), ("INT", "i"), ("UNSIGNED", "I"), ("UNSIGNED_INT", "I"),
    ("LONG", "l"), ("UNSIGNED_LONG", "L"), ("LONG_LONG", "q"), ("UNSIGNED_LONG_LONG", "Q"),
    ("FLOAT", "f"), ("DOUBLE", "d"), ("LONG_DOUBLE", "g"), ("C_BOOL", "?"), ("BOOL", "?"),
    ("C_FLOAT_COMPLEX", "F"), ("C_DOUBLE_COMPLEX", "D"), ("C_LONG_DOUBLE_COMPLEX", "G"),
    ("COMPLEX", "F"), ("DOUBLE_COMPLEX", "D"), ("WCHAR", "i"),
    ("INT8_T", "i1"), ("INT16_T", "i2"), ("INT32_T", "i4"), ("INT64_T", "i8"),
    ("UINT8_T", "u1"), ("UINT16_T", "u2"), ("UINT32_T", "u4"), ("UINT64_T", "u8"),
]
TYPES = {name: Datatype(name, char) for name, char in _PREDEFINED}
TYPES["DATATYPE_NULL"] = Datatype("DATATYPE_NULL", None)
# The datatype a buffer's own format names (mpi4py's typemap): the first predefined type of each.
_BY_CHAR = {}
for _name, _char in _PREDEFINED[2:]:
    _BY_CHAR.setdefault(np.dtype(_char).char, TYPES[_name])
_BY_CHAR.update({"c": TYPES["CHAR"], "b": TYPES["SIGNED_CHAR"], "B": TYPES["UNSIGNED_CHAR"]})


def _format_char(fmt: str) -> str:
    fmt = fmt.lstrip("@=<>!")
    return fmt[1].upper() if fmt.startswith("Z") and len(fmt) == 2 else fmt


def memory(obj):
    """(the buffer's bytes as a writable-if-possible uint8 array over its memory, its format's
    datatype or None, what must stay alive while the array is used)."""
    if obj is None:
        return np.zeros(0, np.uint8), None, None
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        dtype = np.dtype(cai["typestr"])
        nbytes = int(np.prod(cai.get("shape", ()), dtype=np.int64)) * dtype.itemsize
        return _at_address(cai["data"][0], nbytes, cai["data"][1]), _BY_CHAR.get(dtype.char), obj
    try:
        view = memoryview(obj)
    except TypeError:
        if not hasattr(obj, "__dlpack__"):
            raise TypeError(f"message: expecting buffer or None, got {type(obj).__name__}") from None
        return _from_dlpack(obj)
    if not view.c_contiguous:
        raise BufferError("message: buffer is not contiguous")
    raw = np.frombuffer(view.cast("B"), dtype=np.uint8) if view.nbytes else np.zeros(0, np.uint8)
    return raw, _BY_CHAR.get(_format_char(view.format)), obj


class _DLTensor(ctypes.Structure):  # DLPack's DLTensor, the head of an unversioned DLManagedTensor
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


def _from_dlpack(obj):
    """A DLPack exporter's host memory, read from its capsule (the capsule is not consumed: its
    producer frees it, and the memory stays the exporter's)."""
    capsule = obj.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    tensor = _DLTensor.from_address(get(capsule, b"dltensor"))
    kind = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}.get(tensor.code)
    if kind == "f" and tensor.lanes == 2:  # a complex type given as two lanes of its parts
        kind = "c"
    if kind is None or tensor.device_type != 1:  # kDLCPU
        raise BufferError("message: DLPack buffer is not host memory of a numeric type")
    dtype = np.dtype(f"{kind}{tensor.bits * tensor.lanes // 8}")
    items = int(np.prod([tensor.shape[i] for i in range(tensor.ndim)], dtype=np.int64))
    raw = _at_address((tensor.data or 0) + tensor.byte_offset, items * dtype.itemsize, False)
    return raw, _BY_CHAR.get(dtype.char), (obj, capsule)


def _at_address(address: int, nbytes: int, readonly: bool) -> np.ndarray:
    if nbytes == 0 or not address:
        return np.zeros(0, np.uint8)
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))
    raw.flags.writeable = not readonly
    return raw


@dataclass
class Message:
    """A resolved specification: ``count`` elements of ``datatype`` per block, from ``displ``."""

    raw: np.ndarray
    datatype: Datatype
    count: int
    displ: int = 0
    blocks: int = 1
    keep: object = None

    @property
    def total(self) -> int:
        return self.count * self.blocks

    def positions(self, start: int = 0, n: int | None = None) -> np.ndarray:
        """Element offsets (in the element type) of this message's elements ``start..start+n``."""
        n = self.total - start if n is None else n
        per = self.datatype._items()
        items = np.arange((self.displ + start) * per, (self.displ + start + n) * per)
        return np.array([self.datatype._at(i) for i in items], dtype=np.int64) if per and \
            self.datatype.offsets is not None else items

    def elements(self) -> np.ndarray:
        element = self.datatype.element()
        usable = self.raw.size - self.raw.size % element.itemsize
        return self.raw[:usable].view(element)

    def view(self, start: int = 0, n: int | None = None) -> np.ndarray:
        """A writable typed view of elements ``start..start+n`` (a contiguous datatype only)."""
        if self.datatype.offsets is not None:
            raise NotImplementedError("a view of a derived datatype: use read and write")
        n = self.total - start if n is None else n
        return self.elements()[self.displ + start:self.displ + start + n]

    def read(self, start: int = 0, n: int | None = None) -> np.ndarray:
        return np.array(self.elements()[self.positions(start, n)], copy=True)

    def write(self, values, start: int = 0) -> None:
        values = np.asarray(values).reshape(-1)
        self.elements()[self.positions(start, values.size // max(self.datatype._items(), 1))] = values


def _items(spec, displ):
    """(buffer, count, displacement, datatype) of a specification ``buf``, ``[buf, type]``,
    ``[buf, count]``, ``[buf, count, type]`` or ``[buf, count, displ, type]``; ``displ`` when absent."""
    if not isinstance(spec, (list, tuple)):
        return spec, None, displ, None
    if len(spec) == 2:
        buf, second = spec
        return (buf, None, displ, second) if isinstance(second, Datatype) else (buf, second, displ, None)
    if len(spec) == 3:
        return spec[0], spec[1], displ, spec[2]
    if len(spec) == 4:
        return tuple(spec)
    raise ValueError(f"message: expecting 2 to 4 items, got {len(spec)}")


def message(spec, blocks: int = 1) -> Message:
    """``spec`` resolved, ``count`` per block of ``blocks`` (a count given is per block, as mpi4py)."""
    if isinstance(spec, Message):
        return spec
    buf, count, displ, datatype = _items(spec, 0)
    if isinstance(count, tuple):
        count, displ = count
    raw, own, keep = memory(buf)
    datatype = datatype if datatype is not None else (own or TYPES["BYTE"])
    if not isinstance(datatype, Datatype) or datatype.dtype is None:
        raise ValueError(f"message: expecting a datatype, got {datatype!r}")
    extent = datatype.Get_extent()[1] or 1
    if count is None:
        if buf is None:
            count = 0
        elif raw.size % (extent * blocks) or (displ and raw.size < displ * extent):
            raise ValueError(f"message: buffer length {raw.size} is not a multiple of "
                             f"datatype extent {extent} times {blocks}")
        else:
            count = raw.size // extent // blocks - displ
    elif (displ + count * blocks) * extent > raw.size:
        raise ValueError(f"message: buffer length {raw.size} is too small for {count * blocks} "
                         f"items of extent {extent} from displacement {displ}")
    return Message(raw, datatype, int(count), int(displ), blocks, keep)



def vector(spec, size: int) -> tuple[Message, list[int], list[int]]:
    """A vector collective's specification: the whole buffer, and each rank's count and
    displacement in elements. ``[buf, (counts, displs), datatype]``, ``[buf, counts, datatype]``,
    ``[buf, counts]`` or a buffer alone (equal parts); a single count is every rank's, a single
    displacement a stride, no displacements packs the parts one after another (as mpi4py)."""
    buf, counts, displs, datatype = _items(spec, None)
    if isinstance(spec, (list, tuple)) and len(spec) == 3 and isinstance(counts, tuple) and len(counts) == 2:
        counts, displs = counts
    whole = message(buf if datatype is None else [buf, datatype])
    if counts is None:
        counts = whole.total // size if size else 0
    counts = [int(counts)] * size if isinstance(counts, (int, np.integer)) else [int(c) for c in counts]
    if displs is None:
        displs = [sum(counts[:i]) for i in range(size)]
    elif isinstance(displs, (int, np.integer)):
        displs = [i * int(displs) for i in range(size)]
    displs = [int(d) for d in displs]
    if len(counts) != size or len(displs) != size:
        raise ValueError(f"message: expecting {size} counts and displacements")
    if any(c and d + c > whole.total for c, d in zip(counts, displs)):
        raise ValueError(f"message: buffer of {whole.total} items is too small for its counts and displacements")
    return whole, counts, displs
