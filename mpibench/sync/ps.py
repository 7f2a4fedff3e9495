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
exactly; on a device back-end the pulled buffer is first downloaded to the
host in one copy, and the server's slice uploaded with ``backend.load``).
Every worker therefore receives the very bits the server computed, so the
applied update is bitwise identical everywhere.

For a plain sum (``reduce``, what the benchmarks time) the shard plan is
checked against the same contract once per buffer and the pulled sums are
received straight into their slices of the buffer, as the ring does.

The server keeps no state between steps: it reads its slice of the parameters
from its own worker's replica each step, so a lost server can be replaced by
any worker, whose replica is identical.
"""
from __future__ import annotations

import numpy as np

from mpibench.base.aggregate import place_pieces
from . import patterns, segments
from .base import Reduction, SyncStrategy

_PUSH_TAG, _PULL_TAG = 21, 22


class _Exchange:
    """The views and receive space of one push/serve/pull exchange of a buffer's shards.

    ``push_views[k]`` is what this worker sends to shard ``k``'s server and
    ``pull_views[k]`` where the served shard lands; for a plain sum both are
    the shard's slice of the buffer itself (the pull overwrites it in place).
    """

    def __init__(self, plan: segments.SegmentPlan, comm, backend, push_views, pull_views):
        p, rank = comm.size, comm.rank
        self.pieces = plan.pieces()
        self.valid = plan.covers()
        self.push_views, self.pull_views = push_views, pull_views
        self.server = [k % p for k in range(plan.parts)]
        # Each shard served here receives one push from every other worker; this
        # worker's own push is read where it is.
        mine = [k for k in range(plan.parts) if self.server[k] == rank]
        widest = max((len(push_views[k]) for k in mine), default=0)
        space = backend.empty(len(mine) * p * widest)
        self.inbox = {}
        for j, k in enumerate(mine):
            slots = [space[(j * p + w) * widest:(j * p + w) * widest + len(push_views[k])] for w in range(p)]
            slots[rank] = push_views[k]
            self.inbox[k] = slots


def ps_cost_s(cal, p: int, nbytes: float, shards: int = 1) -> float:
    """PS with ``shards`` servers: each receives p-1 pieces of n/k, reduces, returns them.

    The busiest link is a server's (p-1 pieces of n/k in and out) or a
    worker's (k-1 remote pieces of n/k out and back), whichever moves more.
    """
    if p <= 1:
        return cal.call_overhead_s
    k = max(1, min(shards, p))
    piece = nbytes / k
    moved = max(p - 1, k - 1) * piece
    return (2 * (p - 1) * cal.alpha_s + 2 * moved * cal.beta_s_per_byte
            + (p - 1) * piece * cal.gamma_s_per_byte(piece))


class ParameterServer(SyncStrategy):
    name = "ps"
    summary = "parameter server: shards served by the workers themselves, push / sum / pull"
    option_names = ("ps_shards",)
    steps_in_place = False  # each server steps a pulled copy of its slice
    cost_assumption = "PS: the k servers are among the workers and a rank's own piece never travels"
    in_main_job = True
    bench_label = "in-step sync: parameter server"

    @staticmethod
    def message_rounds(p: int, nbytes: float, nodes: list | None) -> list:
        return patterns.ps_rounds(p, nbytes)

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        return ps_cost_s(cal, p, nbytes, (options or {}).get("ps_shards") or p)  # 0: one per member

    @staticmethod
    def message_bytes(p: int, nbytes: float, options: dict | None = None) -> float:
        return nbytes / max(1, min((options or {}).get("ps_shards") or p, p))  # one server's piece

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self.shards = int(self.options.get("ps_shards") or 0) or comm.size
        plan = segments.shard_plan(n_params, self.shards)
        # Push and pull buffers: [slice..., count] per shard, one after the other.
        slots = (plan.widths[0] + 1).tolist()
        starts = np.concatenate(([0], np.cumsum(slots)[:-1])).astype(int).tolist()
        self.push, self.pull = backend.empty(sum(slots)), backend.empty(sum(slots))
        push_views = [self.push[s:s + n] for s, n in zip(starts, slots)]
        pull_views = [self.pull[s:s + n] for s, n in zip(starts, slots)]
        self.step = _Exchange(plan, comm, backend, push_views, pull_views)
        # The parameters live in host memory: the pulled buffer is copied there once per
        # step (a download on a device back-end), and its slices, without their count
        # slots, are the placement pieces.
        self._pulled = np.empty(sum(slots), dtype=np.float32)
        self.placed = [(o, self._pulled[s:s + w]) for (o, w), s in zip(self.step.pieces, starts)]
        self._sum: _Exchange | None = None
        self._sum_buf = None

    # ------------------------------------------------------------------ training step
    def synchronize(self, params, grad_sum, count: int, lr: float) -> Reduction:
        ex = self.step
        for (offset, width), view in zip(ex.pieces, ex.push_views):
            self.backend.pack(view, grad_sum[offset:offset + width], count)

        def serve(k: int, total) -> None:
            offset, width = ex.pieces[k]
            out = ex.pull_views[k]
            # The server's slice, from its own (host) replica: an upload on a device back-end.
            self.backend.load(out[:width], params[offset:offset + width])
            out[width:] = total[width:]  # the total count travels back with the slice
            self.backend.apply_update(out[:width], total[:width], total[width], lr)

        self._exchange(ex, serve)
        self.backend.download(self.pull, self._pulled)
        # Pieces that do not cover the parameters exactly are not written at all: the
        # parameters stay as they were and the coverage invariant names the pieces.
        place_pieces(params, self.placed)
        # The total count, for the records: every pulled slice carries it.
        self.buffer[-1:] = ex.pull_views[0][-1:]
        return Reduction(self.comm.worker_ids, ex.pieces, self.n_params)

    # ------------------------------------------------------------------ plain sum (benchmarks)
    def reduce(self, buf) -> Reduction:
        """Sum ``buf`` through the servers; the pulled sums land in place.

        The shard plan is checked against the ``reassemble`` contract once per
        buffer; with a plan that fails it nothing is exchanged or written.
        """
        if self._sum_buf is not buf:
            plan = segments.shard_plan(len(buf), self.shards)
            views = [buf[o:o + w] for o, w in plan.pieces()]
            self._sum, self._sum_buf = _Exchange(plan, self.comm, self.backend, views, views), buf
        ex = self._sum

        def serve(k: int, total) -> None:
            if total is not ex.pull_views[k]:
                ex.pull_views[k][...] = total

        if ex.valid:
            self._exchange(ex, serve)
        return Reduction(self.comm.worker_ids, ex.pieces, len(buf))

    # ------------------------------------------------------------------ the exchange
    def _exchange(self, ex: _Exchange, serve) -> None:
        """Push every shard to its server, sum and serve the shards held here, pull."""
        comm, rank, p = self.comm, self.comm.rank, self.comm.size
        everyone = range(p)
        self.backend.synchronize()
        requests = []
        for k, slots in ex.inbox.items():
            for w in everyone:
                if w != rank and len(slots[w]):
                    requests.append(comm.irecv(slots[w], w, _PUSH_TAG))
        for k, view in enumerate(ex.push_views):
            if ex.server[k] != rank and len(view):
                requests.append(comm.isend(view, ex.server[k], _PUSH_TAG))
        comm.wait(requests, everyone)
        for k, slots in ex.inbox.items():
            total = slots[0]
            for w in range(1, p):  # worker order: the same bits whichever rank serves
                self.backend.accumulate(total, slots[w])
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
