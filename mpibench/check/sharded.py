"""The checker's own model of a sharded step: which shards exist and who owns each.

Nothing here comes from the production path. A strategy declares in ``case.json``
(``sharding``) which of the documented cuts it makes; the shard widths, the number of
shards and the owner of each are recomputed here from that name and the step's group:

* ``shard-per-member`` (``zero-ring``): one shard per group member, member ``i`` (in
  ascending worker id) owning shard ``i``;
* ``halving-core`` (``zero-halving``): one shard per core rank of the largest power of two
  ``q`` not above ``p``, the first ``2 (p - q)`` members folded in pairs, the odd one of each
  pair in the core;
* ``replica-halves`` (``hsdp``: shards within a group, replicas across groups): the group
  is cut into two replica groups (one when it has a single member), the first ``ceil(p / 2)``
  members and the rest; there are ``ceil(p / 2)`` shards and in replica group ``k`` of ``m``
  members shard ``i`` is owned by its member at position ``i mod m``, so every shard has one
  owner in each replica group. The model lists the shards once per replica group.

Widths: the first ``n % s`` shards one element longer, zero-width shards when there are
fewer elements than shards. A case.json written before strategies declared their cut has no
``sharding`` key; for those the three built-in strategies' names stand for their cuts.
"""
from __future__ import annotations

KINDS = ("shard-per-member", "halving-core", "replica-halves")
REPLICATED = ("replica-halves",)  # cuts whose every shard has one owner per replica group
# case.json files from before the "sharding" key: the cuts the built-in strategies made then
BEFORE_DECLARED = {"zero-ring": "shard-per-member", "zero-halving": "halving-core", "hsdp": "replica-halves"}


def kind_of(case) -> str | None:
    """The case's declared cut (None: not sharded); ValueError for a cut this model does not know."""
    if "sharding" not in case.info:
        return BEFORE_DECLARED.get(case.info.get("strategy"))
    kind = case.info["sharding"]
    if kind is not None and kind not in KINDS:
        raise ValueError(f"case.json declares sharding {kind!r}, which the checker does not know "
                         f"(one of {', '.join(KINDS)})")
    return kind


def is_sharded(case) -> bool:
    return kind_of(case) is not None


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


def replica_groups(kind: str, group) -> list[list[int]]:
    """The worker ids of each replica group (one group, all members, for an unreplicated cut)."""
    members = sorted(group)
    if kind not in REPLICATED or len(members) < 2:
        return [members]
    first = (len(members) + 1) // 2
    return [members[:first], members[first:]]


def expected(kind: str, group: tuple, n: int) -> tuple[list, tuple]:
    """(shards, owner worker ids) the cut ``kind`` makes over ``group`` (worker ids, ascending);
    for a replicated one, every replica group's shards in turn."""
    members = sorted(group)
    if kind in REPLICATED:
        groups = replica_groups(kind, members)
        pieces = shard_pieces(n, len(groups[0]))
        return pieces * len(groups), tuple(g[i % len(g)] for g in groups for i in range(len(pieces)))
    positions = list(range(len(members))) if kind == "shard-per-member" else _core_positions(len(members))
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
