"""What every stateful optimizer shares: its state held as slices of the parameter vector.

The state is kept by global offset, one slice per range a rank steps (see
:mod:`.optimizer` for why, and for momentum; :mod:`.adam` for Adam). A slice is
rolled back with the parameters when an attempt aborts, and a strategy that
re-shards it (``hsdp``'s handover, ``sync/state_handover.py``) moves it as rows:
one float32 row per state field, ``rows`` of them, by global offset.
"""
from __future__ import annotations

import numpy as np


class SlicedState:
    """What every stateful optimizer shares: its state by global offset of the ranges this rank
    steps, rolled back with the parameters, and handed over as rows (:meth:`held_rows`: one row
    per state field, ``rows`` of them) by a strategy that re-shards it (sync/state_handover.py)."""

    name = "optimizer"
    rows = 1

    def __init__(self, params: np.ndarray):
        self.params = params  # the vector whose views the strategies step
        self.slices: dict[int, np.ndarray] = {}  # global offset -> the state of that range
        self._saved: dict[int, np.ndarray] = {}

    @staticmethod
    def length(state: np.ndarray) -> int:
        return int(state.shape[-1])

    def offset_of(self, view: np.ndarray) -> int:
        start = view.__array_interface__["data"][0] - self.params.__array_interface__["data"][0]
        offset = start // self.params.itemsize
        if len(view) and not (0 <= offset and offset + len(view) <= len(self.params)):
            raise RuntimeError(f"{self.name}: the strategy stepped a copy of the parameters, not the parameters")
        return int(offset)

    def _fresh(self, offset: int, length: int, shape: tuple = ()) -> np.ndarray:
        """Zero state for a range first stepped now; a range that overlaps state held for
        another range means the shards moved, and that state cannot be rebuilt here."""
        for o, v in self.slices.items():
            if o < offset + length and offset < o + self.length(v):
                raise RuntimeError(f"{self.name}: elements [{offset}, {offset + length}) were re-sharded; "
                                   "their state is not held here (a refused combination ran)")
        return np.zeros(shape + (length,), dtype=np.float32)

    def save(self) -> None:
        """The rollback point (taken with the parameters before each attempt)."""
        self._saved = {o: v.copy() for o, v in self.slices.items()}

    def restore(self) -> None:
        self.slices = {o: v.copy() for o, v in self._saved.items()}

    def held(self) -> list[tuple[int, np.ndarray]]:
        """``(global offset, state)`` of every range held, by offset."""
        return sorted(self.slices.items())

    def held_rows(self) -> list[tuple[int, np.ndarray]]:
        """``(global offset, float32 array of rows x length)`` of every range held, by offset."""
        return [(o, v.reshape(self.rows, -1)) for o, v in self.held()]

    def take_rows(self, rows: dict) -> None:
        """Hold exactly ``rows`` (global offset -> 1 x length: one state field; a state of more
        rows overrides this), as :meth:`held_rows` gives them."""
        self.slices = {o: np.array(r, dtype=np.float32).reshape(-1) for o, r in rows.items()}

    def fields(self) -> list[tuple[int, list, list]]:
        """``(offset, [float32 arrays], [integers])`` of every range held: what the history records."""
        return [(o, [v], []) for o, v in self.held()]

    def nbytes(self) -> int:
        return sum(v.nbytes for v in self.slices.values())
