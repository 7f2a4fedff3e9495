"""Ring all-reduce: reduce-scatter then all-gather around the ranks, bucket by bucket.

The step buffer ``[grad_sum..., count]`` is cut into buckets of at most
``options["bucket_bytes"]`` (``--bucket-bytes``; DDP's 25 MiB when the option
is absent) and each bucket into
one segment per rank (see :mod:`.segments`; widths may differ and may be
zero). In ``p - 1`` reduce-scatter rounds each rank passes one segment of every
bucket to its right neighbour and adds the one arriving from its left; after
them rank ``r`` holds the full sum of segment ``(r + 1) % p``. In ``p - 1``
all-gather rounds the reduced segments travel once more around the ring and
are received straight into place. The count slot rides along, so sums and
counts are reduced together by construction.

Before anything is written the plan's pieces are checked against the
``reassemble`` contract (``aggregate.check_pieces``); a plan with a gap, an
overlap or a piece out of bounds is refused (the buffer is left unreduced) and
its pieces are still reported, so the ``coverage`` invariant names it.

Hot path: the plan, the receive scratch and every buffer view are built once
per buffer (cached across steps), all rounds use buffer-based non-blocking
calls through the communicator, and a round posts every bucket's transfer at
once, then adds each bucket as soon as its segment has arrived.
"""
from __future__ import annotations

import math

import numpy as np

from . import patterns, segments
from .base import Reduction, SyncStrategy

DEFAULT_BUCKET_BYTES = 25 << 20  # DDP's default bucket_cap_mb
_RING_TAG = 11


def busbw_factor(ranks: int) -> float:
    """Bus bandwidth over algorithm bandwidth for an all-reduce (nccl-tests)."""
    return 2.0 * (ranks - 1) / ranks if ranks > 1 else 0.0


class _Rounds:
    """Everything one buffer needs for the ring: plan, scratch and per-round views."""

    def __init__(self, buf, plan: segments.SegmentPlan, rank: int, backend):
        p = plan.parts
        self.buf = buf
        self.plan = plan
        self.pieces = plan.pieces()
        self.valid = plan.covers()
        widest = plan.max_width()
        scratch = backend.empty(int(widest.sum()))
        starts = np.concatenate(([0], np.cumsum(widest)[:-1])).astype(np.int64) if len(widest) else widest
        # reduce-scatter round s: send segment (r - s), receive and add segment (r - s - 1)
        self.scatter = [self._transfers(plan, (rank - s) % p, (rank - s - 1) % p, scratch, starts)
                        for s in range(p - 1)] if self.valid else []
        # all-gather round s: send segment (r + 1 - s), receive segment (r - s) into place
        self.gather = [self._transfers(plan, (rank + 1 - s) % p, (rank - s) % p, None, starts)
                       for s in range(p - 1)] if self.valid else []

    def _view(self, segment: int, bucket: int):
        offset = int(self.plan.offsets[bucket, segment])
        return self.buf[offset:offset + int(self.plan.widths[bucket, segment])]

    def _transfers(self, plan, send_seg: int, recv_seg: int, scratch, starts):
        """Per bucket: (send view, receive view, view the received segment is added to or None).

        Zero-length segments are left out on both sides (both know the widths).
        """
        out = []
        for b in range(plan.buckets):
            send = self._view(send_seg, b) if plan.widths[b, send_seg] else None
            target = self._view(recv_seg, b) if plan.widths[b, recv_seg] else None
            if scratch is None or target is None:
                recv = target
                target = None
            else:
                recv = scratch[starts[b]:starts[b] + len(target)]
            if send is not None or recv is not None:
                out.append((send, recv, target))
        return out


def ring_cost_s(cal, p: int, nbytes: float, buckets: int = 1) -> float:
    """2(p-1)a + 2((p-1)/p) n b + ((p-1)/p) n g, with the latency paid per bucket."""
    if p <= 1:
        return cal.call_overhead_s
    share = (p - 1) / p
    return (2 * (p - 1) * buckets * cal.alpha_s + 2 * share * nbytes * cal.beta_s_per_byte
            + share * nbytes * cal.gamma_s_per_byte(nbytes))


def _bucket_bytes(nbytes: float, options) -> float:
    """The cost model's bucket: --bucket-bytes when given, else the whole buffer as one."""
    return (options or {}).get("bucket_bytes") or nbytes


class RingAllreduce(SyncStrategy):
    name = "ring"
    summary = "ring: reduce-scatter then all-gather around the ranks, bucket by bucket"
    option_names = ("bucket_bytes",)
    cost_assumption = "ring: reduce-scatter then allgather over p segments per bucket"
    in_main_job = True
    bench_label = "in-step sync: ring all-reduce (reduce-scatter + all-gather)"

    @staticmethod
    def message_rounds(p: int, nbytes: float, nodes: list | None) -> list:
        return patterns.ring_rounds(p, nbytes)

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        buckets = max(1, math.ceil(nbytes / max(_bucket_bytes(nbytes, options), 1)))
        return ring_cost_s(cal, p, nbytes, buckets)

    @staticmethod
    def message_bytes(p: int, nbytes: float, options: dict | None = None) -> float:
        return min(nbytes, _bucket_bytes(nbytes, options)) / p  # a segment of a bucket

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        bucket_bytes = int(self.options.get("bucket_bytes") or DEFAULT_BUCKET_BYTES)
        self.bucket_elems = max(1, bucket_bytes // self.buffer.dtype.itemsize)
        self.right = (comm.rank + 1) % comm.size
        self.left = (comm.rank - 1) % comm.size
        self._rounds: _Rounds | None = None

    def rounds_for(self, buf) -> _Rounds:
        """The cached plan and views for ``buf`` (rebuilt only for a new buffer)."""
        if self._rounds is None or self._rounds.buf is not buf:
            plan = segments.bucket_plan(len(buf), self.bucket_elems, self.comm.size)
            self._rounds = _Rounds(buf, plan, self.comm.rank, self.backend)
        return self._rounds

    def reduce(self, buf) -> Reduction:
        rounds = self.rounds_for(buf)
        for transfers in rounds.scatter:
            self._round(transfers, accumulate=True)
        for transfers in rounds.gather:
            self._round(transfers, accumulate=False)
        return Reduction(self.comm.worker_ids, rounds.pieces, len(buf))

    def _round(self, transfers, accumulate: bool) -> None:
        """One ring round over every bucket: post all transfers, then finish them in order."""
        comm, peers = self.comm, (self.left, self.right)
        if not transfers:
            return
        self.backend.synchronize()  # device buffers must be final before MPI reads them
        requests = []
        for send, recv, _ in transfers:
            requests.append(comm.irecv(recv, self.left, _RING_TAG) if recv is not None else None)
            requests.append(comm.isend(send, self.right, _RING_TAG) if send is not None else None)
        if not accumulate:
            comm.wait([r for r in requests if r is not None], peers)
            return
        # Add each bucket's segment as soon as it is in, while later buckets still travel.
        for i, (_, recv, target) in enumerate(transfers):
            pair = [r for r in requests[2 * i:2 * i + 2] if r is not None]
            comm.wait(pair, peers)
            if target is not None:
                self.backend.accumulate(target, recv)
