"""``gathered``: after the all-gather every rank holds, shard by shard, what its owner stepped.

Sharded strategies only. Each contributor records the digest of every shard of
the parameters it holds after the step, and each owner the digest of the shard
it stepped, right after stepping it. Every shard's digest must be the same on
every contributor and equal its owner's, and equal that shard of the copy the
``equivalence`` check compares with the reference: a stale or corrupted gather
names the shard, its owner and the worker that holds something else. With
replicas (``hsdp``) a shard is listed once per replica group with that group's
owner, so every rank must hold what each replica stepped: the replicas stepped
the same bits.
"""
from __future__ import annotations

from ..history import full_params, params_digest
from ..sharded import contributors, evidence, is_sharded

NAME = "gathered"


def applies(case) -> bool:
    return is_sharded(case)


def check(case, view):
    active = sorted(contributors(view), key=lambda a: a.worker)
    records = {a.worker: evidence(a) for a in active}
    if any(e is None for e in records.values()):
        return False, "a contributor committed a sharded step without its sharding evidence"
    first = records[active[0].worker]
    owners, shards = first["owners"], first["shards"]
    stepped = {}
    for w, e in records.items():
        for piece, d in zip(e["owned"], e["stepped"]):
            stepped[(w, piece)] = d
    copy = next((full_params(a.full_after) for a in active if a.full_after is not None), None)
    for i, (piece, owner) in enumerate(zip(shards, owners)):
        if (owner, piece) not in stepped:
            return False, f"shard {i} {piece}: its owner {owner} recorded no step of it"
        by, want = owner, stepped[(owner, piece)]
        for w, e in records.items():
            if e["gathered"][i] != want:
                return False, (f"shard {i} {piece}: worker {w} holds {e['gathered'][i][:12]}, "
                               f"its owner {by} stepped {want[:12]}")
        if copy is not None and params_digest(copy[piece[0]:piece[0] + piece[1]], want) != want:
            return False, f"shard {i} {piece}: the committed parameter copy differs from what {by} stepped"
    return True, f"{len(shards)} shards identical on {len(records)} ranks, each as its owner stepped it"
