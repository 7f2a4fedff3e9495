"""The data oracle: what each worker must have consumed, in order, from the seed alone.

Worker ``w`` walks shard ``w`` (fixed at the start) epoch by epoch in the
seeded order of each epoch, ``batch_size`` samples at a time, the last batch
of an epoch short. Its consumed batches are those of its committed attempts
in which it contributed or was dropped as late (stalled and aborted attempts
consume nothing), over all its incarnations, in step order: they must be
exactly the consecutive slices of that walk.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import seeding


@dataclass(frozen=True)
class Slip:
    """Where a worker's batch left the walk."""

    worker: int
    step: int
    text: str


class Walker:
    """The expected walk of every shard, advanced as the history is read step by step."""

    def __init__(self, seed: int, shards: list[np.ndarray], batch_size: int):
        self.seed, self.shards, self.batch_size = seed, shards, batch_size
        self.cursor = {w: (0, 0) for w in range(len(shards))}
        self._orders: dict[tuple[int, int], np.ndarray] = {}

    def order(self, w: int, epoch: int) -> np.ndarray:
        key = (w, epoch)
        if key not in self._orders:
            self._orders[key] = seeding.epoch_order(self.seed, w, self.shards[w], epoch)
        return self._orders[key]

    def slice_at(self, w: int, cursor: tuple) -> tuple[np.ndarray, tuple]:
        """Worker ``w``'s batch at ``cursor`` ``(epoch, position)`` and the cursor after it
        (without moving the walk: for judging what a record claims)."""
        epoch, pos = int(cursor[0]), int(cursor[1])
        shard_len = len(self.shards[w])
        if shard_len == 0:
            return self.shards[w][:0], (epoch, pos)
        end = min(pos + self.batch_size, shard_len)
        return self.order(w, epoch)[pos:end], ((epoch + 1, 0) if end == shard_len else (epoch, end))

    def take(self, w: int, step: int, batch: tuple) -> Slip | None:
        """Compare ``batch`` with worker ``w``'s next slice and move on (by the oracle's walk)."""
        epoch, pos = self.cursor[w]
        shard_len = len(self.shards[w])
        if shard_len == 0:
            return None if not batch else Slip(w, step, f"worker {w} consumed {len(batch)} samples of an empty shard")
        order = self.order(w, epoch)
        end = min(pos + self.batch_size, shard_len)
        expected = order[pos:end]
        self.cursor[w] = (epoch + 1, 0) if end == shard_len else (epoch, end)
        if len(batch) == len(expected) and np.array_equal(np.asarray(batch, dtype=np.int64), expected):
            return None
        return Slip(w, step, self._describe(w, epoch, pos, expected, batch))

    def _describe(self, w: int, epoch: int, pos: int, expected: np.ndarray, batch: tuple) -> str:
        got = np.asarray(batch, dtype=np.int64)
        shard = set(self.shards[w].tolist())
        outside = [int(i) for i in got if int(i) not in shard]
        where = f"epoch {epoch} position {pos} of shard {w} ({len(self.shards[w])} samples)"
        if outside:
            return f"worker {w} used {len(outside)} samples outside its shard {w} (e.g. {outside[0]}) at {where}"
        found = self._locate(w, got, epoch)
        text = (f"worker {w} consumed {len(got)} samples {_head(got)} but the walk expects "
                f"{len(expected)} {_head(expected)} at {where}")
        return text + (f"; the batch is {found}" if found else "")

    def _locate(self, w: int, got: np.ndarray, epoch: int) -> str | None:
        """Where the batch really comes from, if it is a slice of a nearby epoch order."""
        if not len(got):
            return None
        for e in range(max(0, epoch - 2), epoch + 3):
            order = self.order(w, e)
            hits = np.flatnonzero(order == got[0])
            if len(hits) and np.array_equal(order[hits[0]:hits[0] + len(got)], got):
                return f"epoch {e}'s order at position {int(hits[0])}"
        return None


def _head(values, n: int = 4) -> str:
    items = [str(int(v)) for v in values[:n]]
    return "[" + " ".join(items) + (" ...]" if len(values) > n else "]")
