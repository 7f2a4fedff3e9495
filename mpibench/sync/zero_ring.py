"""Sharded data parallelism over a ring: reduce-scatter, sharded step, all-gather (ZeRO-2 style).

The step buffer is laid out by :class:`~.sharding.ShardLayout`: shard ``i``
of the parameters with its own count slot. In ``p - 1`` reduce-scatter rounds
each rank (in ascending worker-id order around the ring) passes one shard to its right neighbour and adds the one arriving
from its left, so that rank ``r`` ends holding the full sum (and the total
count) of shard ``r`` and of no other. Rank ``r`` alone steps shard ``r``
(divide once by the count, update) and writes the stepped parameters over
the sums; ``p - 1`` all-gather rounds then carry every owner's parameters
once around the ring, received straight into place, and every rank copies
them into its parameters. Each element is therefore stepped by one rank and
every rank holds that rank's bits.

Cost: the reduce-scatter and the all-gather each move ``(p-1)/p`` of the
buffer (nccl-tests' busbw factor for each), together one ring all-reduce's
bandwidth term; the step's arithmetic is ``1/p`` of a replicated one.
``reduce`` (what the benchmarks time) is the two collectives on a plain
buffer, an all-reduce; ``reduce_scatter`` and ``all_gather`` time them apart.
"""
from __future__ import annotations

from . import patterns, segments, sharding
from .rounds import Round, compact

_TAG = 51


def collective_busbw_factor(ranks: int) -> float:
    """Bus bandwidth over algorithm bandwidth for a reduce-scatter or an all-gather (nccl-tests)."""
    return (ranks - 1) / ranks if ranks > 1 else 0.0


def ring_rounds(plan: segments.SegmentPlan, ring: list[int], rank: int, buf, scratch) -> tuple[list, list]:
    """(reduce-scatter rounds, all-gather rounds) of one bucket's segments around ``ring``
    (communicator ranks in ring order); ring position ``r`` ends owning segment ``r``."""
    p = plan.parts
    left, right = ring[(rank - 1) % p], ring[(rank + 1) % p]

    def view(array, seg, base=None):
        o, w = int(plan.offsets[0, seg]), int(plan.widths[0, seg])
        return array[o:o + w] if base is None else array[base:base + w]

    scatter, gather = [], []
    for s in range(p - 1):
        send, recv = (rank - s - 1) % p, (rank - s - 2) % p
        rnd = Round((left, right))
        rnd.send(view(buf, send), right)
        rnd.recv(view(scratch, recv, 0), left, into=view(buf, recv))
        scatter.append(rnd)
        send, recv = (rank - s) % p, (rank - s - 1) % p
        rnd = Round((left, right))
        rnd.send(view(buf, send), right)
        rnd.recv(view(buf, recv), left)
        gather.append(rnd)
    return compact(scatter), compact(gather)


class ZeroRing(sharding.ShardedStrategy):
    name = "zero-ring"
    sharding_kind = "shard-per-member"  # member i owns shard i
    summary = "sharded (ZeRO-2): ring reduce-scatter, each rank steps its own shard, ring all-gather"
    option_names = ()
    cost_assumption = "zero-ring: a ring reduce-scatter and a ring all-gather, one ring all-reduce's traffic"

    @staticmethod
    def message_rounds(p: int, nbytes: float, nodes: list | None) -> list:
        return patterns.ring_rounds(p, nbytes)
    tag = _TAG

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self.layout = sharding.ShardLayout(n_params, comm.size)
        self.step_buffer = backend.zeros(self.layout.buffer_length)
        self._scratch = backend.empty(int(self.layout.buffer_widths.max(initial=0)))
        self.ring, position = sharding.by_worker_id(comm.worker_ids)
        self.position = position[comm.rank]  # the ring runs in worker-id order
        self.rounds = ring_rounds(self.layout.plan(), self.ring, self.position, self.step_buffer, self._scratch)
        self._plain = None  # (buf, scatter, gather) for reduce() on a plain buffer

    def owned_shard(self) -> int | None:
        """The shard this rank steps."""
        return self.position

    def owners(self) -> tuple[int, ...]:
        return tuple(sorted(self.comm.worker_ids))

    # -- the collectives alone, on a plain buffer (benchmarks)
    def _plain_rounds(self, buf):
        if self._plain is None or self._plain[0] is not buf:
            widths = segments.split_widths(len(buf), self.comm.size)
            plan = segments.SegmentPlan(segments.offsets_of(widths)[None, :], widths[None, :], len(buf))
            scratch = self.backend.empty(int(widths.max(initial=0)))
            self._plain = (buf, plan, *ring_rounds(plan, self.ring, self.position, buf, scratch))
        return self._plain

    @staticmethod
    def part_cost_s(part: str, cal, p: int, nbytes: float) -> float:
        """All-gather: (p-1) a + ((p-1)/p) n b; reduce-scatter adds ((p-1)/p) n g."""
        if p <= 1:
            return cal.call_overhead_s
        share = (p - 1) / p
        t = (p - 1) * cal.alpha_s + share * nbytes * cal.beta_s_per_byte
        return t + (share * nbytes * cal.gamma_s_per_byte(nbytes) if part == "reduce-scatter" else 0.0)

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        """Ring reduce-scatter + ring all-gather: 2(p-1)a + 2((p-1)/p) n b + ((p-1)/p) n g,
        one ring all-reduce (the sharded step's arithmetic, 1/p of the replicated one, is compute)."""
        if p <= 1:
            return cal.call_overhead_s
        return ZeroRing.part_cost_s("reduce-scatter", cal, p, nbytes) + ZeroRing.part_cost_s("all-gather", cal, p, nbytes)
