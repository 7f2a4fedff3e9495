"""The simulated library's reduction operations: ``MPI.SUM`` and the other predefined ones.

An :class:`Op` is its name (a ``str``), so code that compares an operation with ``"sum"`` or
``"max"`` keeps working, and it combines buffers in their own element type as MPI does (integers
wrap, no promotion). ``Reduce_local`` checks its two messages as mpi4py does before MPI sees them.
"""
from __future__ import annotations

import numpy as np

from .buffers import message

_COMBINE = {  # (accumulated, next) -> combined, in place in ``accumulated``
    "sum": lambda acc, v: np.add(acc, v, out=acc),
    "prod": lambda acc, v: np.multiply(acc, v, out=acc),
    "max": lambda acc, v: np.maximum(acc, v, out=acc),
    "min": lambda acc, v: np.minimum(acc, v, out=acc),
    "land": lambda acc, v: np.logical_and(acc, v, out=acc, casting="unsafe"),
    "lor": lambda acc, v: np.logical_or(acc, v, out=acc, casting="unsafe"),
    "band": lambda acc, v: np.bitwise_and(acc, v, out=acc),
    "bor": lambda acc, v: np.bitwise_or(acc, v, out=acc),
    "bxor": lambda acc, v: np.bitwise_xor(acc, v, out=acc),
    "lxor": lambda acc, v: np.logical_xor(acc, v, out=acc, casting="unsafe"),
    "replace": lambda acc, v: np.copyto(acc, v) or acc,
    "no_op": lambda acc, v: acc,
}


def _loc(better):
    def pick(x, y):  # (value, index) pairs: the better value, the lower index on a tie (as mpi4py)
        (u, i), (v, j) = x, y
        if better(u, v):
            return x
        return y if better(v, u) else (u, min(i, j))
    return pick


_OBJECTS = {  # how mpi4py combines Python objects, operation by operation
    "sum": lambda x, y: x + y, "prod": lambda x, y: x * y,
    "max": lambda x, y: y if y > x else x, "min": lambda x, y: y if y < x else x,
    "maxloc": _loc(lambda u, v: u > v), "minloc": _loc(lambda u, v: u < v),
    "replace": lambda x, y: y, "no_op": lambda x, y: x,
    "land": lambda x, y: x and y, "lor": lambda x, y: x or y, "lxor": lambda x, y: bool(x) != bool(y),
    "band": lambda x, y: x & y, "bor": lambda x, y: x | y, "bxor": lambda x, y: x ^ y,
}


class Op(str):
    """A predefined reduction operation, named as MPI names it (lower case)."""

    def __repr__(self) -> str:
        return f"<simulated MPI.Op {self.upper()}>"

    def combine(self, acc: np.ndarray, value) -> np.ndarray:
        with np.errstate(all="ignore"):  # wrap-around and overflow are MPI's too
            return _COMBINE[str(self)](acc, value)

    def __call__(self, x, y):
        """``x op y`` on Python objects, as mpi4py's reductions of objects combine them."""
        return _OBJECTS[str(self)](x, y)

    def Is_commutative(self) -> bool:
        return str(self) not in ("replace", "no_op")

    def Free(self) -> None:
        pass

    def Reduce_local(self, inbuf, inoutbuf) -> None:
        """``inoutbuf = inbuf op inoutbuf``, element by element."""
        src, dst = message(inbuf), message(inoutbuf)
        if src.total != dst.total:
            raise ValueError(f"mismatch in inbuf count {src.total} and inoutbuf count {dst.total}")
        if src.datatype is not dst.datatype:
            raise ValueError("mismatch in inbuf and inoutbuf MPI datatypes")
        acc = src.read()
        dst.write(self.combine(acc, dst.read()))


OPS = {name.upper(): Op(name) for name in {**_COMBINE, **_OBJECTS}}
OPS["OP_NULL"] = Op("op_null")


def reduce_in_order(values, op) -> np.ndarray:
    """``values[0] op values[1] op ...``, left to right, in the first value's element type."""
    op = op if isinstance(op, Op) else Op(op)
    acc = np.array(values[0], copy=True)
    for v in values[1:]:
        op.combine(acc, v)
    return acc
