"""The walk every optimizer model of the checker shares: its state after each committed step,
in order, from the reference gradients alone; broken (None from then on) at the first committed
step without a reference, since a later state cannot be known without it. Cached per case."""
from __future__ import annotations


def walk(case, table: dict, name: str, start, advance, idle):
    """``step -> state`` (or None once the chain breaks). ``advance(state, view, due)`` gives the
    state after a step with contributors; ``idle(state)`` after one where nobody contributed."""
    found = case.state.get(name)
    if found is not None:
        return found
    found, current = {}, start
    for view in case.views():
        if view.agreed is None:
            continue
        due = table.get(view.step)
        ref = due.ref if due is not None else None
        if current is None or ref is None:
            current = None
        elif ref.n_samples:
            current = advance(current, view, due)
        else:
            current = idle(current)
        found[view.step] = current
    case.state[name] = found
    return found
