"""``ownership``: every parameter element stepped exactly once per step, by its shard's owner.

Sharded strategies only. For each committed step, from the checker's own model
of the shards (``check/sharded.py``): every contributor reports the shards and
owners the model expects for the step's group; the pieces the contributors
say they stepped cover the parameters exactly once (no element stepped twice,
none left unstepped); and each piece lies in a shard its stepper owns. With
replicas (``hsdp``) each replica group's pieces cover the parameters exactly
once: every element stepped once by its owner in every replica group. That
the owner stepped from the fully reduced gradient is shown with ``gathered``
(everyone holds what the owner stepped) and ``equivalence`` (what everyone
holds is the reference update over the whole union).
"""
from __future__ import annotations

from ..sharded import contributors, evidence, expected, is_sharded, kind_of, replica_groups
from .coverage import gap

NAME = "ownership"


def applies(case) -> bool:
    return is_sharded(case)


def check(case, view):
    n = len(case.initial_params)
    stepped = {}  # replica group index -> pieces its members stepped
    shards = owners = None
    groups = []
    for a in sorted(contributors(view), key=lambda a: a.worker):
        e = evidence(a)
        if e is None:
            return False, f"worker {a.worker} committed a sharded step without its sharding evidence"
        shards, owners = expected(kind_of(case), a.group, n)
        groups = replica_groups(kind_of(case), a.group)
        if e["shards"] != shards or e["owners"] != owners:
            return False, (f"worker {a.worker} used shards {e['shards'][:4]} owned by {list(e['owners'])}, "
                           f"expected {shards[:4]} owned by {list(owners)} for group {list(a.group)}")
        mine = [shards[i] for i, w in enumerate(owners) if w == a.worker]
        for piece in e["owned"]:
            if not any(o <= piece[0] and piece[0] + piece[1] <= o + w for o, w in mine):
                return False, f"worker {a.worker} stepped {piece}, outside the shard(s) it owns {mine}"
        k = next((k for k, g in enumerate(groups) if a.worker in g), 0)
        stepped.setdefault(k, []).extend(e["owned"])
    for k in range(max(len(groups), 1)):
        problem = gap(stepped.get(k, []), n)
        if problem:
            within = f" in replica group {k} {groups[k]}" if len(groups) > 1 else ""
            return False, f"stepped pieces do not cover the {n} parameters exactly once{within}: {problem}"
    return True, (f"{n} elements stepped once each by the owners of {len(shards or [])} shards"
                  + (f" ({len(groups)} replica groups)" if len(groups) > 1 else ""))
