"""What the sharded strategies share: the shard layout, the sharded step and its evidence.

ZeRO and FSDP do not all-reduce the gradient: they reduce-scatter it so that
each rank ends owning the full sum of one shard, step the optimizer on that
shard alone, and all-gather the updated parameters. The strategies here
(``zero-ring``, ``zero-halving``) differ only in how the two collectives
travel; this module holds everything else.

Layout. The parameters are cut into ``shards`` consecutive pieces
(:func:`~.segments.split_widths`: uneven when the length does not divide,
zero-length shards when there are fewer elements than shards). The step
buffer holds shard ``i`` as ``[gradient sums of shard i..., count]``: every
shard carries its own count slot, so the reduce-scatter reduces sums and
counts together and each owner divides its shard once by the total count it
received with it. For the all-gather the owner writes its stepped parameters
over its shard's sums (the count slot stays), so after the gather every rank
holds the parameters and the total count, whichever shard it owned (or none:
a rank folded out of a non-power-of-two group owns nothing).

Evidence. :class:`ShardedReduction` adds to the usual reduction the shards
(parameter offset and length, by owner position), the pieces this rank
stepped and a copy of what it stepped them to, so the history can show that
every element was stepped exactly once, by its owner, and that every rank
gathered the owner's values (``check/invariants/ownership.py``, ``gathered.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import segments
from .base import Reduction, SyncStrategy
from .rounds import run_rounds


# The cuts a strategy may declare (SyncStrategy.sharding_kind), as the checker models them on its
# own (check/sharded.py): member i owns shard i; one shard per core rank of the power-of-two
# fold; shards within each half of the group, replicated across the halves.
SHARDING_KINDS = ("shard-per-member", "halving-core", "replica-halves")


@dataclass
class ShardedReduction(Reduction):
    """A reduction that stepped shards: who owns what, and what this rank stepped."""

    shards: list[tuple[int, int]] = field(default_factory=list)  # (param offset, length) by owner position
    owners: tuple[int, ...] = ()  # worker id owning shard i
    owned: list[tuple[int, int]] = field(default_factory=list)  # pieces this rank stepped, in order
    stepped: list = field(default_factory=list)  # host copies of those pieces right after the step


class ShardLayout:
    """``n_params`` parameters in ``shards`` shards, and the step buffer with a count slot per shard."""

    def __init__(self, n_params: int, shards: int):
        self.n_params, self.count = n_params, shards
        self.widths = segments.split_widths(n_params, shards)
        self.offsets = segments.offsets_of(self.widths) if shards else self.widths
        # shard i occupies buffer[buffer_offsets[i] : buffer_offsets[i] + widths[i] + 1]
        self.buffer_widths = self.widths + 1
        self.buffer_offsets = self.offsets + np.arange(shards, dtype=np.int64)
        self.buffer_length = n_params + shards

    def pieces(self) -> list[tuple[int, int]]:
        """Every shard of the parameters as ``(offset, length)``."""
        return list(zip(self.offsets.tolist(), self.widths.tolist()))

    def buffer_pieces(self) -> list[tuple[int, int]]:
        """Every shard of the step buffer (sums and count slot) as ``(offset, length)``."""
        return list(zip(self.buffer_offsets.tolist(), self.buffer_widths.tolist()))

    def plan(self) -> segments.SegmentPlan:
        """The step buffer as one bucket of ``shards`` segments (each shard with its count slot)."""
        return segments.SegmentPlan(self.buffer_offsets[None, :].copy(), self.buffer_widths[None, :].copy(),
                                    self.buffer_length)

    def params_view(self, params, shard: int):
        o, w = int(self.offsets[shard]), int(self.widths[shard])
        return params[o:o + w]

    def sums_view(self, buf, shard: int):
        o, w = int(self.buffer_offsets[shard]), int(self.widths[shard])
        return buf[o:o + w]

    def count_view(self, buf, shard: int):
        o = int(self.buffer_offsets[shard] + self.widths[shard])
        return buf[o:o + 1]


def by_worker_id(worker_ids) -> tuple[list[int], int]:
    """(communicator rank of each position in worker-id order, this list's inverse lookup).

    Shards are owned by position in ascending worker id, not by communicator rank: a
    replacement spawned for worker w may get any rank, yet it takes over w's shard."""
    order = sorted(range(len(worker_ids)), key=lambda r: worker_ids[r])
    return order, {r: v for v, r in enumerate(order)}


def pack(backend, layout: ShardLayout, buf, grad_sum, count: int) -> None:
    """Write every shard's ``[sums..., count]`` into the step buffer."""
    for i in range(layout.count):
        o, w = int(layout.buffer_offsets[i]), int(layout.buffer_widths[i])
        backend.pack(buf[o:o + w], layout.params_view(grad_sum, i), count)


def step_shard(backend, layout: ShardLayout, buf, params, shard: int, lr: float):
    """The sharded optimizer step on ``shard``: divide its sums once by its count, update, and
    write the stepped parameters over the sums for the all-gather. Returns a host copy of them.
    (The optimizer's state, if any, steps inside ``apply_update``: see engine/optimizer.py.)"""
    target = layout.params_view(params, shard)
    sums = layout.sums_view(buf, shard)
    count = layout.count_view(buf, shard)[0]
    backend.apply_update(target, sums, count, lr)
    backend.load(sums, target)
    return np.array(target, dtype=np.float32, copy=True)


def unpack(backend, layout: ShardLayout, buf, params) -> None:
    """Every shard's gathered parameters from the step buffer into place."""
    for i in range(layout.count):
        if layout.widths[i]:
            backend.download(layout.sums_view(buf, i), layout.params_view(params, i))


class ShardedStrategy(SyncStrategy):
    """The sharded step: pack, reduce-scatter, step the owned shard, all-gather, unpack. A
    subclass sets ``layout``, ``step_buffer``, ``rounds`` (scatter, gather) and ``tag``, and says
    which shard this rank owns and who owns each; it may move the shards its own way by
    overriding :meth:`scatter_shards` / :meth:`gather_shards` (the count slots travel with them)."""

    tag = 50
    layout: ShardLayout
    rounds: tuple
    step_buffer: object  # the layout's buffer: every shard's sums with its own count slot

    # ``buffer`` (the base's plain ``[sums..., count]``) is what the benchmarks reduce; a
    # training step never uses it, so it is allocated only when asked for (the base's
    # allocation is dropped) and does not count against the sharded strategies' memory.
    @property
    def buffer(self):
        if self._plain_buffer is None:
            self._plain_buffer = self.backend.zeros(self.n_params + 1)
        return self._plain_buffer

    @buffer.setter
    def buffer(self, value) -> None:
        self._plain_buffer = None  # the base's allocation, not kept

    def total_count(self) -> int | float:
        value = float(self.backend.to_host(self.step_buffer[-1:])[0])
        return int(value) if np.isfinite(value) and value == int(value) else value

    def owned_shard(self) -> int | None:
        raise NotImplementedError

    def owners(self) -> tuple[int, ...]:
        raise NotImplementedError

    def synchronize(self, params, grad_sum, count: int, lr: float) -> Reduction:
        layout = self.layout
        pack(self.backend, layout, self.step_buffer, grad_sum, count)
        self.scatter_shards()
        owned, stepped = self.step_owned(params, lr)
        self.gather_shards()
        self.gather_into(params)
        return ShardedReduction(self.comm.worker_ids, layout.buffer_pieces(), layout.buffer_length, self.name,
                                shards=layout.pieces(), owners=self.owners(), owned=owned, stepped=stepped)

    def scatter_shards(self) -> None:
        """Leave every shard's sums and count (``layout``'s piece of ``step_buffer``) on its
        owner; by default the prepared reduce-scatter rounds. A plugin may move them its own
        way (``comm.reduce(piece, out, root=owner)`` per shard, ``comm.reduce_scatter``)."""
        run_rounds(self.comm, self.backend, self.rounds[0], self.tag)

    def gather_shards(self) -> None:
        """Give every rank each owner's stepped shard, in place in ``step_buffer``; by default
        the prepared all-gather rounds."""
        run_rounds(self.comm, self.backend, self.rounds[1], self.tag)

    def step_owned(self, params, lr: float) -> tuple[list, list]:
        """Step the shard this rank owns: (pieces stepped, host copies of what they became)."""
        shard = self.owned_shard()
        if shard is None:  # folded out: nothing owned, but the step's phase still passes here
            self.backend.apply_update(params[:0], self.step_buffer[:0], 0, 0.0)
            return [], []
        stepped = step_shard(self.backend, self.layout, self.step_buffer, params, shard, lr)
        return [self.layout.pieces()[shard]], [stepped]

    def gather_into(self, params) -> None:
        unpack(self.backend, self.layout, self.step_buffer, params)

    # The collective halves on a plain buffer (bench's rows, reduce()): each subclass's
    # _plain_rounds(buf) gives (buf, plan, scatter rounds, gather rounds) for that buffer.
    def reduce_scatter(self, buf) -> Reduction:
        _, plan, scatter, _ = self._plain_rounds(buf)
        run_rounds(self.comm, self.backend, scatter, self.tag)
        return Reduction(self.comm.worker_ids, plan.pieces(), len(buf), self.name)

    def all_gather(self, buf) -> Reduction:
        _, plan, _, gather = self._plain_rounds(buf)
        run_rounds(self.comm, self.backend, gather, self.tag)
        return Reduction(self.comm.worker_ids, plan.pieces(), len(buf), self.name)

    def reduce(self, buf) -> Reduction:
        self.reduce_scatter(buf)
        return self.all_gather(buf)
