"""``optimizer_state``: each rank's optimizer state is the reference velocity's slice it owns.

Runs with ``--momentum`` only. Every contributor records the state it holds after
the step as ``(offset, length, float32 values)``. The checker's own velocity
(``check/momentum.py``, float64 from the reference gradients) decides what each
must hold: a replicated strategy the whole vector; a sharded one exactly the
non-empty shards it owns (``check/sharded.py``; with replicas, those it owns in its
replica group), nothing of anyone else's; and
the values within the velocity's float32 bound, element by element. Lost,
stale, doubled or misplaced state is named with its worker and its range.
"""
from __future__ import annotations

import numpy as np

from .. import momentum
from ..history import floats32
from ..sharded import contributors, expected, is_sharded, kind_of
from .equivalence import EPS32, _table, error_terms

NAME = "optimizer_state"


def applies(case) -> bool:
    return momentum.factor(case) > 0


def _velocity(case, step):
    table = _table(case)
    chain = momentum.chain(case, table, lambda v, r: error_terms(case, v, r) * EPS32 * r.grad_abs_mean)
    return chain.get(step)


def _owed(case, a, n: int, started: bool) -> list:
    """The ranges worker ``a`` must hold state for after the step."""
    if not started:
        return []
    if not is_sharded(case):
        return [(0, n)] if n else []
    shards, owners = expected(kind_of(case), a.group, n)
    return sorted(piece for piece, w in zip(shards, owners) if w == a.worker and piece[1])


def check(case, view):
    v = _velocity(case, view.step)
    if v is None:
        return None, "no reference velocity for the step (a committed step before it has no reference)"
    n = len(case.initial_params)
    started = bool(np.any(v.value))
    worst = 0.0
    for a in sorted(contributors(view), key=lambda a: a.worker):
        held = [(int(o), int(length)) for o, length, _ in (a.optimizer or ())]
        owed = _owed(case, a, n, started)
        if held != owed:
            return False, f"worker {a.worker} holds optimizer state for {held[:4]}, expected {owed[:4]}"
        for o, length, data in a.optimizer or ():
            values = floats32(data).astype(np.float64)
            ref, bound = v.value[o:o + length], v.bound[o:o + length] + EPS32 * np.abs(v.value[o:o + length])
            with np.errstate(all="ignore"):
                excess = np.abs(values - ref) / (bound + 1e-30)
            if len(values) != length or not (excess <= 1).all():
                i = int(np.argmax(np.nan_to_num(excess, nan=np.inf))) if len(values) == length else 0
                return False, (f"worker {a.worker}: state element {o + i} is {values[i]:.9g}, reference "
                               f"velocity {ref[i]:.9g} ({excess[i]:.3g}x bound)")
            worst = max(worst, float(excess.max(initial=0.0)))
    return True, f"every contributor's state is its slice of the reference velocity (worst {worst:.2g}x bound)"
