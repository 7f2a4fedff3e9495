"""Parameter server: workers push to server shards, shards update, workers pull.

The parameter vector is cut into ``K`` server shards by global offset
(``options["ps_shards"]``, 0 meaning one per member; widths may differ, see
:mod:`.segments`). Shard ``k`` is served by rank ``k % p``.

Servers are **colocated** with the workers rather than run on dedicated ranks:
the world size stays the worker count (so ring, PS and native run on the same
job and the same data shards), no rank sits idle while the others compute, and
every rank serves a slice, which spreads the server traffic over all links
instead of funnelling it into a few server processes.

A step, for each shard: every worker pushes ``[grad_sum slice..., count]`` to
the shard's server; the server adds the pushes in worker order (so the sum
does not depend on which rank serves), divides once by the total count and
applies the update to its slice; every worker pulls ``[new slice..., total
count]`` and the pulled slices are put into its parameters with
``aggregate.place_pieces`` (nothing written unless they cover the vector
exactly). Every worker therefore receives the very bits the server computed,
so the applied update is bitwise identical everywhere.

The server keeps no state between steps: it reads its slice of the parameters
from its own worker's replica each step, so a lost server can be replaced by
any worker, whose replica is identical.
"""
from __future__ import annotations

import math

import numpy as np

from ..aggregate import place_pieces
from . import segments
from .base import Reduction, SyncStrategy

_PUSH_TAG, _PULL_TAG = 21, 22


def modelled_time_s(ranks: int, n_bytes: int, alpha_s: float, beta_s_per_byte: float,
                    gamma_s_per_byte: float, shards: int = 0) -> float:
    """Alpha-beta-gamma cost, bound by the busiest server: it receives ``p - 1``
    pushes and sends ``p - 1`` pulls of each shard it serves, and adds the pushes."""
    if ranks < 2:
        return 0.0
    shards = shards or ranks
    served = math.ceil(shards / ranks) / shards * n_bytes  # bytes of the busiest server
    return (2 * (ranks - 1) * math.ceil(shards / ranks) * alpha_s
            + 2 * (ranks - 1) * served * beta_s_per_byte + (ranks - 1) * served * gamma_s_per_byte)


class _Exchange:
    """Buffers and views for pushing a buffer's shards to their servers and pulling them back.

    ``extra`` is 1 when each shard message carries the count after the slice.
    """

    def __init__(self, source, plan: segments.SegmentPlan, comm, backend, extra: int):
        p, rank = comm.size, comm.rank
        self.source, self.plan = source, plan
        offsets, widths = plan.offsets[0].tolist(), plan.widths[0].tolist()
        self.pieces = list(zip(offsets, widths))
        self.server = [k % p for k in range(len(widths))]
        slots = [w + extra for w in widths]
        starts = np.concatenate(([0], np.cumsum(slots)[:-1])).astype(int).tolist() if slots else []
        self.pull = backend.empty(sum(slots))
        self.pull_views = [self.pull[s:s + n] for s, n in zip(starts, slots)]
        # Each shard served here receives one push from every other worker.
        mine = [k for k in range(len(widths)) if self.server[k] == rank]
        widest = max((slots[k] for k in mine), default=0)
        inbox = backend.empty(len(mine) * p * widest)
        self.inbox = {k: [inbox[(j * p + w) * widest:(j * p + w) * widest + slots[k]] for w in range(p)]
                      for j, k in enumerate(mine)}
        # The placement pieces for the pulled slices (without their count slot).
        self.placed = [(o, v[:w]) for o, w, v in zip(offsets, widths, self.pull_views)]


class ParameterServer(SyncStrategy):
    name = "ps"

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self.shards = int(self.options.get("ps_shards") or 0) or comm.size
        plan = segments.shard_plan(n_params, self.shards)
        self.step = _Exchange(None, plan, comm, backend, extra=1)
        # The push buffer: [slice..., count] per shard, laid out like the pull buffer.
        self.push = backend.empty(len(self.step.pull))
        self.push_views = [self.push[v_start:v_start + len(v)] for v_start, v in
                           zip(self._starts(self.step.pull_views), self.step.pull_views)]
        self._sum: _Exchange | None = None

    @staticmethod
    def _starts(views) -> list[int]:
        return np.concatenate(([0], np.cumsum([len(v) for v in views])[:-1])).astype(int).tolist()

    # ------------------------------------------------------------------ training step
    def synchronize(self, params, grad_sum, count: int, lr: float) -> Reduction:
        ex = self.step
        for (offset, width), view in zip(ex.pieces, self.push_views):
            self.backend.pack(view, grad_sum[offset:offset + width], count)

        def serve(k: int, total) -> None:
            offset, width = ex.pieces[k]
            out = ex.pull_views[k]
            out[:width] = params[offset:offset + width]  # the server's slice, from its replica
            out[width:] = total[width:]  # the total count travels back with the slice
            self.backend.apply_update(out[:width], total[:width], total[width], lr)

        self._exchange(ex, self.push_views, serve)
        if not place_pieces(params, ex.placed):
            raise AssertionError("pulled shards do not cover the parameters")  # plan bug: fail loudly
        # The total count, for the records: every pulled slice carries it.
        self.buffer[-1:] = ex.pull_views[0][-1:] if ex.pull_views else 0
        return Reduction(self.comm.worker_ids, ex.pieces, self.n_params)

    # ------------------------------------------------------------------ plain sum (benchmarks)
    def reduce(self, buf) -> Reduction:
        if self._sum is None or self._sum.source is not buf:
            plan = segments.shard_plan(len(buf), self.shards)
            ex = _Exchange(buf, plan, self.comm, self.backend, extra=0)
            ex.push_views = [buf[o:o + w] for o, w in ex.pieces]
            self._sum = ex
        ex = self._sum

        def serve(k: int, total) -> None:
            ex.pull_views[k][...] = total

        self._exchange(ex, ex.push_views, serve)
        if not place_pieces(buf, ex.placed):
            raise AssertionError("pulled shards do not cover the buffer")
        return Reduction(self.comm.worker_ids, ex.pieces, len(buf))

    # ------------------------------------------------------------------ the exchange
    def _exchange(self, ex: _Exchange, push_views, serve) -> None:
        """Push every shard to its server, let each served shard be summed and served, pull."""
        comm, rank, p = self.comm, self.comm.rank, self.comm.size
        everyone = range(p)
        self.backend.synchronize()
        requests = []
        for k, inbox in ex.inbox.items():
            for w in everyone:
                if w != rank and len(inbox[w]):
                    requests.append(comm.irecv(inbox[w], w, _PUSH_TAG))
        for k, view in enumerate(push_views):
            if ex.server[k] != rank and len(view):
                requests.append(comm.isend(view, ex.server[k], _PUSH_TAG))
        comm.wait(requests, everyone)
        for k, inbox in ex.inbox.items():
            inbox[rank] = push_views[k]  # this worker's own push needs no message
            total = inbox[0]
            for w in range(1, p):  # worker order: the same sum whichever rank serves
                self.backend.accumulate(total, inbox[w])
            serve(k, total)
        self.backend.synchronize()
        requests = []
        for k, view in enumerate(ex.pull_views):
            if ex.server[k] != rank and len(view):
                requests.append(comm.irecv(view, ex.server[k], _PULL_TAG))
        for k in ex.inbox:
            for w in everyone:
                if w != rank and len(ex.pull_views[k]):
                    requests.append(comm.isend(ex.pull_views[k], w, _PULL_TAG))
        comm.wait(requests, everyone)
