"""The history's evidence of optimizer state and of sharded steps (see ``check/CONTRACT.md``).

Built only where a history is kept, outside the timed reduction: the state
slices a worker holds after the step (``--momentum``, ``--optimizer adam|adamw``), and for a sharded
strategy the shards and their owners, the pieces this worker stepped with
the digest of what it stepped them to, and the digest of every shard of the
parameters it holds after the all-gather. The checker reads them with its
own code (``check/sharded.py``) and judges them against its own model.
"""
from __future__ import annotations

from .history import params_b64, params_digest


def optimizer_evidence(optimizer) -> list | None:
    """``[[offset, length, base64 state..., integers...], ...]`` of every range held, or None
    without state: momentum ``[offset, length, v]``, Adam ``[offset, length, m, v, t]``."""
    if optimizer is None:
        return None
    return [[int(o), int(len(arrays[0])), *[params_b64(a) for a in arrays], *[int(i) for i in ints]]
            for o, arrays, ints in optimizer.fields()]


def sharding_evidence(reduction, params) -> dict | None:
    """The sharded step's evidence, or None for a reduction that stepped no shards."""
    shards = getattr(reduction, "shards", None)
    if not shards:
        return None
    return {
        "shards": [[int(o), int(n)] for o, n in shards],
        "owners": [int(w) for w in reduction.owners],
        "owned": [[int(o), int(n)] for o, n in reduction.owned],
        "stepped": [params_digest(v) for v in reduction.stepped],
        "gathered": [params_digest(params[o:o + n]) for o, n in shards],
    }
