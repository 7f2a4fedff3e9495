"""Two-level all-reduce: reduce inside each node, all-reduce among node leaders, broadcast inside.

Nodes come from ``Split_type(COMM_TYPE_SHARED)`` on the step group's MPI
communicator (the ranks that share memory), learned on the first reduction
and exchanged through the communicator; ``options["ranks_per_node"]``
(``--ranks-per-node``) instead cuts the group into consecutive blocks of that
many ranks, which lets one host play several nodes. Each node's leader is its
lowest rank. Per bucket:

1. a binomial-tree reduce to the leader inside the node (children first, in
   a fixed order, so the sum does not depend on timing);
2. the leaders' all-reduce across nodes: recursive doubling for buckets up to
   ``SMALL_BUCKET_BYTES``, Rabenseifner's halving/doubling above;
3. a binomial-tree broadcast from the leader inside the node, into place.

With one node there is no step 2: the scheme degenerates to a reduce and a
broadcast inside the node, ``2 ceil(log2 p)`` whole-buffer rounds, slower
than ``rd`` on the same ranks. It does so honestly: the ``algorithm`` it
reports says ``1 node``, and the first reduction prints one line saying so.
All data moves through the communicator's point-to-point calls, so faults
reach every phase. Pieces: one per bucket, by global offset.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from . import patterns, plans, segments
from .bucketed import (BucketedStrategy, Compiled, halving_doubling_rounds,
                       rd_rounds)
from .rabenseifner import rabenseifner_cost_s
from .rd import rd_cost_s
from .rounds import Round, compact

SMALL_BUCKET_BYTES = 16 << 10
_SAID: set[str] = set()  # leaders use recursive doubling up to here, halving/doubling above


class Hierarchical(BucketedStrategy):
    name = "hier"
    summary = ("two-level: binomial reduce inside each node (Split_type COMM_TYPE_SHARED), leaders' "
               "all-reduce, binomial broadcast; one node degenerates to reduce + broadcast")
    option_names = ("bucket_bytes", "ranks_per_node")
    tag = 51
    topology_aware = True

    @staticmethod
    def message_rounds(p: int, nbytes: float, nodes: list | None) -> list:
        """A tree in each node, the leaders' rd up to SMALL_BUCKET_BYTES or Rabenseifner above."""
        return patterns.hier_rounds(nodes, nbytes, SMALL_BUCKET_BYTES)
    cost_assumption = ("hier: binomial reduce and broadcast inside a node (all ranks on one node unless "
                       "ranks_per_node is given), the leaders' all-reduce across nodes")

    @staticmethod
    def message_bytes(p: int, nbytes: float, options: dict | None = None) -> float:
        return nbytes  # whole-buffer messages

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        self._nodes: list[list[int]] | None = None

    # ------------------------------------------------------------------ nodes
    def nodes(self) -> list[list[int]]:
        """Communicator ranks of every node, each sorted; nodes ordered by their leader."""
        if self._nodes is None:
            leaders = self._leaders()
            grouped: dict[int, list[int]] = {}
            for rank, leader in enumerate(leaders):
                grouped.setdefault(leader, []).append(rank)
            self._nodes = [grouped[k] for k in sorted(grouped)]
        return self._nodes

    def _leaders(self) -> list[int]:
        """Every rank's node leader: by ``ranks_per_node`` blocks, or by shared memory."""
        size = self.comm.size
        per_node = int(self.options.get("ranks_per_node") or 0)
        if per_node:
            return [r - r % per_node for r in range(size)]
        mine = np.array([min(self._shared_memory_ranks())], dtype=np.float64)
        rows = np.empty(size, dtype=np.float64)
        self.comm.allgather(mine, rows)  # through the communicator: deadline and faults apply
        return [int(x) for x in rows]

    def _shared_memory_ranks(self) -> list[int]:
        from mpi4py import MPI

        from .comm import translate

        mpi = self.comm.mpi
        try:
            node = mpi.Split_type(MPI.COMM_TYPE_SHARED, key=self.comm.rank)
            node_group, group = node.Get_group(), mpi.Get_group()
            ranks = MPI.Group.Translate_ranks(node_group, list(range(node.Get_size())), group)
            node_group.Free()
            group.Free()
            node.Free()
        except MPI.Exception as exc:
            raise translate(exc, self.comm.worker_ids) from None
        return [int(r) for r in ranks]

    # ------------------------------------------------------------------ plan
    def compile(self, buf) -> Compiled:
        nodes = self.nodes()
        plan = segments.bucket_plan(len(buf), self.bucket_elems, 1)
        scratch = self.backend.empty(len(buf))
        buckets = [buf[o:o + n] for o, n in plan.pieces()]
        spaces = [scratch[o:o + n] for o, n in plan.pieces()]
        node = next(n for n in nodes if self.comm.rank in n)
        i = node.index(self.comm.rank)
        leaders = [n[0] for n in nodes]
        widest = min(len(buf), self.bucket_elems) * buf.dtype.itemsize
        inter = "rd" if widest <= SMALL_BUCKET_BYTES else "rabenseifner"
        rounds = []
        if plan.covers():
            rounds += intra_reduce(node, i, buckets, spaces)
            if i == 0 and len(leaders) > 1:
                me = leaders.index(self.comm.rank)
                if inter == "rd":
                    rounds += rd_rounds(leaders, me, buckets, spaces)
                else:
                    q = plans.largest_power_of_two(len(leaders))
                    inner = segments.bucket_plan(len(buf), self.bucket_elems, q)
                    rounds += halving_doubling_rounds(leaders, me, buf, scratch, inner)
            rounds += intra_broadcast(node, i, buckets)
        text = describe_layout(nodes, inter)
        if len(nodes) == 1 and self.comm.rank == 0 and text not in _SAID:
            _SAID.add(text)  # once per process and layout: every rebuild would repeat it
            print(f"hier: {text}: no leaders' all-reduce, only a reduce and a broadcast inside the node",
                  file=sys.stderr, flush=True)
        return Compiled(buf, compact(rounds), plan.pieces(), plan.covers(), f"hier[{text}]")

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        options = options or {}
        per_node = int(options.get("ranks_per_node") or 0) or p
        return hier_cost_s(cal, p, nbytes, per_node)


def describe_layout(nodes, inter: str) -> str:
    sizes = sorted({len(n) for n in nodes})
    per = "/".join(map(str, sizes))
    if len(nodes) == 1:
        return f"1 node x {per}"
    return f"{len(nodes)} nodes x {per}, leaders {inter}"


def intra_reduce(node, i: int, buckets, spaces) -> list[Round]:
    """Binomial reduce to node position 0: add each child's buckets, then pass them up."""
    rounds = []
    for child in plans.binomial_children(len(node), i):
        rnd = Round((node[child],))
        for view, space in zip(buckets, spaces):
            rnd.recv(space, node[child], into=view)
        rounds.append(rnd)
    parent = plans.binomial_parent(i)
    if parent is not None:
        rnd = Round((node[parent],))
        for view in buckets:
            rnd.send(view, node[parent])
        rounds.append(rnd)
    return rounds


def intra_broadcast(node, i: int, buckets) -> list[Round]:
    """Binomial broadcast from node position 0, the reduce's tree run backwards, into place."""
    rounds = []
    parent = plans.binomial_parent(i)
    if parent is not None:
        rnd = Round((node[parent],))
        for view in buckets:
            rnd.recv(view, node[parent])
        rounds.append(rnd)
    for child in reversed(plans.binomial_children(len(node), i)):
        rnd = Round((node[child],))
        for view in buckets:
            rnd.send(view, node[child])
        rounds.append(rnd)
    return rounds


def hier_cost_s(cal, p: int, nbytes: float, per_node: int) -> float:
    """ceil(log2 m)(a + n b + n g) in, the leaders' all-reduce across N nodes, ceil(log2 m)(a + n b) out."""
    if p <= 1:
        return cal.call_overhead_s
    per_node = max(1, min(per_node, p))
    nodes = math.ceil(p / per_node)
    depth = math.ceil(math.log2(per_node)) if per_node > 1 else 0
    inside = depth * (2 * cal.alpha_s + 2 * nbytes * cal.beta_s_per_byte + nbytes * cal.gamma_s_per_byte(nbytes))
    if nodes <= 1:
        return inside
    across = rd_cost_s if nbytes <= SMALL_BUCKET_BYTES else rabenseifner_cost_s
    return inside + across(cal, nodes, nbytes)
