"""Known-bad overlapped syncs: mistakes in the buckets a strategy starts during the backward pass.

Each is a mixin over a strategy that overlaps (``native``), overriding its nonblocking
protocol (``start_bucket`` / ``finish_buckets``, :mod:`mpibench.sync.base`), so it shows only
in a run with ``--overlap`` (:mod:`mpibench.sync.overlap` starts a bucket per layer as the
backward pass completes it, the last layer's, which carries the count, first). Every bucket
still goes through the communicator, so the fault wrapper sees its messages as it sees an
honest bucket's. Each reports its pieces as an honest bucket would, so the checker must see
the mistake in the values:

* ``early-bucket``: the first bucket's update uses the local gradient it was started with, as
  if read before its sync completed (equivalence: the update is not the union's mean);
* ``bucket-twice``: the bucket that carries the count is summed a second time once its sum is
  in (the sum of sums: every worker's count p times over; accounting);
* ``bucket-offsets``: each bucket's sum is written back where it would lie if the buckets were
  laid out in the order they started, its pieces reported there; they still tile the buffer
  exactly, so coverage passes and the misplaced values must show (equivalence).
"""
from __future__ import annotations

from mpibench.sync.base import Reduction


class EarlyBucketMixin:
    def start_bucket(self, offset, length):
        if offset + length > self.n_params:  # the first bucket started: the last layer's, with the count
            self._local = (offset, self.buffer[offset:self.n_params].copy())
        return super().start_bucket(offset, length)

    def finish_buckets(self, handles):
        reductions = super().finish_buckets(handles)
        offset, local = self._local
        self.buffer[offset:offset + len(local)] = local  # its local gradient, not the sum
        return reductions


class BucketTwiceMixin:
    def finish_buckets(self, handles):
        reductions = super().finish_buckets(handles)
        for r in reductions:
            (offset, length), = r.pieces
            if offset + length > self.n_params:  # the bucket with the count slot, once more
                super().finish_buckets([super().start_bucket(offset, length)])
        return reductions


class BucketOffsetsMixin:
    def finish_buckets(self, handles):
        reductions = super().finish_buckets(handles)
        sums = [(piece, self.buffer[piece[0]:piece[0] + piece[1]].copy()) for r in reductions for piece in r.pieces]
        placed, cursor = [], 0
        for (_, length), values in sums:  # in start order, from offset 0
            self.buffer[cursor:cursor + length] = values
            placed.append(Reduction(reductions[0].contributing, [(cursor, length)], len(self.buffer)))
            cursor += length
        return placed


OVERLAP_MIXINS = {"early-bucket": EarlyBucketMixin, "bucket-twice": BucketTwiceMixin,
                  "bucket-offsets": BucketOffsetsMixin}
