"""Hybrid sharded data parallelism (HSDP): shards within a replica group, replicas across groups.

The members, in ascending worker id, form two replica groups (one when
there is a single member): the first ``ceil(p / 2)`` and the rest. The
parameters are cut into ``ceil(p / 2)`` shards by
:class:`~.sharding.ShardLayout`; in a group of ``m`` members, shard ``i`` is
owned by the member at position ``i mod m`` (a member of the smaller group
of an odd ``p`` owns two shards), so every shard has one owner in each
replica group. A step:

1. reduce-scatter within the group: every member sends each shard's
   ``[sums..., count]`` to that shard's owner in its group, which adds them in
   position order;
2. the two owners of a shard (one per group) swap their group's sums and
   each adds the other's: IEEE addition commutes, so both replicas hold the
   same bits of the full sum and total count;
3. each owner steps its shards (both replicas step identical bits, their
   optimizer state included);
4. all-gather within the group: each owner sends its stepped shards to the
   other members of its group.

What the replicas buy is recovery of the optimizer state: with
``--momentum`` (the velocity) or ``--optimizer adam|adamw`` (m, v and the step
count t), a shard's state is held by two ranks, so the death of one leaves
the other. When a strategy is built on a new membership (after a
shrink or a respawn) its first step hands the state over first
(:func:`.state_handover.hand_over`): every member receives, for the shards it
now owns, the state any member still holds, and keeps exactly that. What it
cannot do is bring back a shard whose every holder died before the handover
committed; ``engine/optimizer.refusal`` refuses such schedules before the
run, and the handover fails loudly rather than restart that state at zero.

Cost: a reduce-scatter and an all-gather within a group of ``p/2`` (direct
messages, ``(m-1)/m`` of the buffer each) plus one swap of ``1/s`` of the
buffer across groups; the optimizer state per rank is ``2/p`` of the whole.
"""
from __future__ import annotations

from . import segments, sharding
from .rounds import Round, compact
from .state_handover import hand_over

_TAG = 53


def replica_groups(p: int) -> list[tuple[int, int]]:
    """``(first position, members)`` of each replica group of ``p`` members in worker-id order."""
    if p < 2:
        return [(0, p)]
    first = (p + 1) // 2
    return [(0, first), (first, p - first)]


def owner_position(groups: list[tuple[int, int]], k: int, shard: int) -> int:
    """Worker-id position of shard ``shard``'s owner in replica group ``k``."""
    start, m = groups[k]
    return start + shard % m


def hsdp_rounds(plan: segments.SegmentPlan, order: list[int], position: int, buf, backend) -> tuple[list, list]:
    """(scatter rounds, gather rounds) over one bucket of ``s`` segments; ``order`` maps worker-id
    positions to communicator ranks, ``position`` is this rank's. Within a group, round ``t``
    handles shards ``t m .. t m + m - 1`` (one per member), so no two messages of a round share
    a sender and a receiver."""
    s = plan.parts
    groups = replica_groups(len(order))
    k = 0 if len(groups) == 1 or position < groups[1][0] else 1
    start, m = groups[k]
    me = position - start
    peers = tuple(order[start + j] for j in range(m) if j != me)

    def view(shard):
        o, w = int(plan.offsets[0, shard]), int(plan.widths[0, shard])
        return buf[o:o + w]

    scatter, gather = [], []
    for t in range(0, s, m):
        rs, ag = Round(peers), Round(peers)
        for shard in range(t, min(t + m, s)):
            owner = order[start + shard % m]
            if shard % m != me:
                rs.send(view(shard), owner)
                ag.recv(view(shard), owner)
                continue
            for j in range(m):  # the owner adds its group's copies in position order
                if j != me:
                    scratch = backend.empty(len(view(shard)))
                    rs.recv(scratch, order[start + j], into=view(shard))
                    ag.send(view(shard), order[start + j])
        scatter.append(rs)
        gather.append(ag)
    if len(groups) == 2:  # the owners of each shard swap their group's sums
        swap = Round(tuple(order[owner_position(groups, 1 - k, i)] for i in range(s) if i % m == me))
        for shard in range(me, s, m):
            other = order[owner_position(groups, 1 - k, shard)]
            swap.send(view(shard), other)
            swap.recv(backend.empty(len(view(shard))), other, into=view(shard))
        scatter.append(swap)
    return compact(scatter), compact(gather)


def lost_shards(members: list[int], dead: set[int]) -> list[int]:
    """Shards (of the layout over ``members``, worker ids) whose every owner is in ``dead``."""
    ids, groups = sorted(members), replica_groups(len(members))
    shards = groups[0][1]
    return [i for i in range(shards) if all(ids[owner_position(groups, k, i)] in dead for k in range(len(groups)))]


class Hsdp(sharding.ShardedStrategy):
    name = "hsdp"
    sharding_kind = "replica-halves"  # shards within each half of the group, replicated across the halves
    summary = ("hybrid sharded (HSDP): shards within two replica groups, replicas across them; "
               "a lost shard's optimizer state is handed over from its replica")
    option_names = ()
    cost_assumption = ("hsdp: a reduce-scatter and all-gather within each half of the group, "
                       "and one swap of each shard with its replica")
    tag = _TAG
    lost_shards = staticmethod(lost_shards)  # which shards' state a set of deaths leaves with no holder

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self.order, position = sharding.by_worker_id(comm.worker_ids)
        self.position = position[comm.rank]
        self.groups = replica_groups(comm.size)
        self.k = 0 if len(self.groups) == 1 or self.position < self.groups[1][0] else 1
        self.layout = sharding.ShardLayout(n_params, self.groups[0][1])
        self.step_buffer = backend.zeros(self.layout.buffer_length)
        self.rounds = hsdp_rounds(self.layout.plan(), self.order, self.position, self.step_buffer, backend)
        self._handed_over = False
        self._plain = None

    def owned_shards(self) -> list[int]:
        start, m = self.groups[self.k]
        return list(range(self.position - start, self.layout.count, m))

    def owned_shard(self) -> int | None:
        """The first shard this rank owns (a member of the smaller group may own two)."""
        return self.owned_shards()[0] if self.owned_shards() else None

    def owners(self) -> tuple[int, ...]:
        ids = sorted(self.comm.worker_ids)
        return tuple(ids[owner_position(self.groups, k, i)] for k in range(len(self.groups))
                     for i in range(self.layout.count))

    def synchronize(self, params, grad_sum, count: int, lr: float):
        optimizer = getattr(self.backend, "optimizer", None)
        if optimizer is not None and not self._handed_over:
            self.hand_over_state(optimizer)
            self._handed_over = True
        reduction = super().synchronize(params, grad_sum, count, lr)
        reduction.shards = self.layout.pieces() * len(self.groups)
        return reduction

    def hand_over_state(self, optimizer) -> None:
        """Leave ``optimizer`` holding the state of the shards this rank owns on this membership,
        taken from whichever member holds it (:func:`.state_handover.hand_over`)."""
        mine = [self.layout.pieces()[i] for i in self.owned_shards()]
        hand_over(self.comm, self.backend, optimizer, self.owner_pieces(), mine, self.tag + 1)

    def owner_pieces(self) -> dict[int, list[tuple[int, int]]]:
        """Communicator rank -> the parameter pieces it owns (every member, both groups)."""
        pieces, out = self.layout.pieces(), {}
        for k, (start, m) in enumerate(self.groups):
            for j in range(m):
                out[self.order[start + j]] = [pieces[i] for i in range(j, self.layout.count, m)]
        return out

    def step_owned(self, params, lr: float) -> tuple[list, list]:
        owned, stepped = [], []
        for shard in self.owned_shards():
            stepped.append(sharding.step_shard(self.backend, self.layout, self.step_buffer, params, shard, lr))
            owned.append(self.layout.pieces()[shard])
        if not owned:  # the step's phase still passes here
            self.backend.apply_update(params[:0], self.step_buffer[:0], 0, 0.0)
        return owned, stepped

    def _plain_rounds(self, buf):
        if self._plain is None or self._plain[0] is not buf:
            widths = segments.split_widths(len(buf), self.layout.count)
            plan = segments.SegmentPlan(segments.offsets_of(widths)[None, :], widths[None, :], len(buf))
            self._plain = (buf, plan, *hsdp_rounds(plan, self.order, self.position, buf, self.backend))
        return self._plain

    @staticmethod
    def part_cost_s(part: str, cal, p: int, nbytes: float) -> float:
        """Within a group of m = ceil(p/2): m-1 messages of n/m each way; the reduce-scatter adds
        the swap of n/m with the replica and m additions of n/m."""
        if p <= 1:
            return cal.call_overhead_s
        m = (p + 1) // 2
        share = nbytes / m
        t = (m - 1) * (cal.alpha_s + share * cal.beta_s_per_byte)
        if part == "reduce-scatter":
            t += cal.alpha_s + share * cal.beta_s_per_byte + m * share * cal.gamma_s_per_byte(nbytes)
        return t

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        """The group's reduce-scatter with the replica swap, then the group's all-gather."""
        if p <= 1:
            return cal.call_overhead_s
        return Hsdp.part_cost_s("reduce-scatter", cal, p, nbytes) + Hsdp.part_cost_s("all-gather", cal, p, nbytes)
