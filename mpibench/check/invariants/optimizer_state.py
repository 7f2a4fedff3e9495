"""``optimizer_state``: each rank's optimizer state is the reference state's slice it owns.

Runs with optimizer state only (``--momentum``, ``--optimizer adam|adamw``). Every
contributor records the state it holds after the step as ``(offset, length, float32
values..., integers...)``: momentum's velocity; Adam's ``m``, ``v`` and step count ``t``.
The checker's own model (``check/optimizer_model.py``: ``check/momentum.py``,
``check/adam.py``, float64 from the reference gradients) decides what each must
hold: a replicated strategy the whole vector; a sharded one exactly the
non-empty shards it owns (``check/sharded.py``; with replicas, those it owns in its
replica group), nothing of anyone else's; the values within the model's float32
bound, element by element, and the integers exactly. Lost, stale, doubled or
misplaced state is named with its worker and its range.
"""
from __future__ import annotations

import numpy as np

from .. import optimizer_model
from ..history import floats32
from ..sharded import contributors, expected, is_sharded, kind_of
from .equivalence import EPS32, _table, error_terms

NAME = "optimizer_state"


def applies(case) -> bool:
    return optimizer_model.stateful(case)


def _state(case, step):
    return optimizer_model.state(case, step, _table(case),
                                 lambda v, r: error_terms(case, v, r) * EPS32 * r.grad_abs_mean)


def _owed(case, a, n: int, started: bool) -> list:
    """The ranges worker ``a`` must hold state for after the step."""
    if not started:
        return []
    if not is_sharded(case):
        return [(0, n)] if n else []
    shards, owners = expected(kind_of(case), a.group, n)
    return sorted(piece for piece, w in zip(shards, owners) if w == a.worker and piece[1])


def check(case, view):
    want = _state(case, view.step)
    if want is None:
        return None, "no reference optimizer state for the step (a committed step before it has no reference)"
    n = len(case.initial_params)
    worst = 0.0
    for a in sorted(contributors(view), key=lambda a: a.worker):
        held = [(int(entry[0]), int(entry[1])) for entry in (a.optimizer or ())]
        owed = _owed(case, a, n, want.started)
        if held != owed:
            return False, f"worker {a.worker} holds optimizer state for {held[:4]}, expected {owed[:4]}"
        for entry in a.optimizer or ():
            problem, excess = _entry_problem(a.worker, entry, want)
            if problem:
                return False, problem
            worst = max(worst, excess)
    what = " and ".join([name for name, *_ in want.arrays] + [name for name, _ in want.integers])
    return True, f"every contributor's state is its slice of the reference {what} (worst {worst:.2g}x bound)"


def _entry_problem(worker: int, entry, want) -> tuple[str | None, float]:
    """(what is wrong with one recorded range, or None; its worst element's share of the bound)."""
    o, length = int(entry[0]), int(entry[1])
    arrays, integers = entry[2:2 + len(want.arrays)], list(entry[2 + len(want.arrays):])
    if len(arrays) != len(want.arrays) or len(integers) != len(want.integers):
        return (f"worker {worker}: state of [{o}, {o + length}) records {len(entry) - 2} fields, expected "
                f"{', '.join(name for name, *_ in want.arrays + want.integers)}"), 0.0
    for (name, value), got in zip(want.integers, integers):
        if got != value:
            return f"worker {worker}: {name} of [{o}, {o + length}) is {got}, reference {value}", 0.0
    worst = 0.0
    for (name, value, bound), data in zip(want.arrays, arrays):
        values = floats32(data).astype(np.float64)
        ref, allowed = value[o:o + length], bound[o:o + length]
        with np.errstate(all="ignore"):
            excess = np.abs(values - ref) / (allowed + 1e-30)
        if len(values) != length or not (excess <= 1).all():
            i = int(np.argmax(np.nan_to_num(excess, nan=np.inf))) if len(values) == length else 0
            if len(values) != length:
                return f"worker {worker}: {name} of [{o}, {o + length}) holds {len(values)} values", 0.0
            return (f"worker {worker}: {name} element {o + i} is {values[i]:.9g}, reference "
                    f"{ref[i]:.9g} ({excess[i]:.3g}x bound)"), 0.0
        worst = max(worst, float(excess.max(initial=0.0)))
    return None, worst
