"""The checker's own model of a sharded step: which shards exist and who owns each.

Nothing here comes from the production path: the shard widths, the number of
shards and the owner of each are recomputed from the strategy's name and the
step's group, the way the strategies document them (``zero-ring``: one shard
per group member, member ``i`` owning shard ``i``; ``zero-halving``: one shard
per core rank of the largest power of two ``q`` not above ``p``, the first
``2 (p - q)`` members folded in pairs, the odd one of each pair in the core).
Widths: the first ``n % s`` shards one element longer, zero-width shards when
there are fewer elements than shards.
"""
from __future__ import annotations

SHARDED = ("zero-ring", "zero-halving")


def is_sharded(case) -> bool:
    return case.info.get("strategy") in SHARDED


def shard_pieces(n: int, shards: int) -> list[tuple[int, int]]:
    """``(offset, length)`` of each of ``shards`` consecutive shards of ``n`` elements."""
    base, extra = divmod(n, shards)
    out, offset = [], 0
    for i in range(shards):
        width = base + (1 if i < extra else 0)
        out.append((offset, width))
        offset += width
    return out


def _core_positions(p: int) -> list[int]:
    """Group positions of the core ranks, in core order, for the halving fold."""
    q = 1
    while q * 2 <= p:
        q *= 2
    extra = p - q
    return [2 * v + 1 if v < extra else v + extra for v in range(q)]


def expected(strategy: str, group: tuple, n: int) -> tuple[list, tuple]:
    """(shards, owner worker ids) the strategy must use over ``group`` (worker ids, ascending)."""
    members = sorted(group)
    positions = list(range(len(members))) if strategy == "zero-ring" else _core_positions(len(members))
    return shard_pieces(n, len(positions)), tuple(members[i] for i in positions)


def contributors(view) -> list:
    """The step's committing contributors (a dropped straggler took part but stepped nothing)."""
    return [a for a in view.active if a.role == "contribute"]


def evidence(a) -> dict | None:
    """A committing record's sharding evidence with its lists as tuples, or None."""
    s = a.sharding
    if not isinstance(s, dict):
        return None
    return {"shards": [tuple(x) for x in s["shards"]], "owners": tuple(s["owners"]),
            "owned": [tuple(x) for x in s["owned"]], "stepped": list(s["stepped"]),
            "gathered": list(s["gathered"])}
