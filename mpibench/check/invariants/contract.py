"""``contract``: every record of every role holds to the history contract (``check/CONTRACT.md``).

The other invariants judge what the committing records say about a step. This one
judges what *every* record claims (stalled, late, aborted and replacement ones
too) against the checker's own model of each worker, carried from step to step:
where its walk stands (its cursor, advanced only by its consuming commits), which
parameters it holds (its file's chain of digests: a commit moves it, a rollback
does not; a resync of the step may stand in for it) and which records a live worker owes (one final
record per step it was alive for). A live member's missing or contradictory
evidence is a violation here, never "cannot judge": only a file that stops
where a scheduled kill explains it may lack its last records.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..history import floats32

NAME = "contract"
ROLES = ("contribute", "late", "stall")
SHOWN = 3  # problems named in one row's detail


@dataclass
class Model:
    """What the checker expects of each worker before the next step."""

    walker: object
    initial: str
    cursor: dict = field(default_factory=dict)  # worker -> (epoch, position)
    chain: dict = field(default_factory=dict)  # file -> digest of the parameters it holds


def _model(case) -> Model:
    model = case.state.get(NAME)
    if model is None:
        model = case.state[NAME] = Model(case.walker(), case.initial_digest())
        model.cursor = {w: (0, 0) for w in range(case.plan.world_size)}
    return model


def check(case, view):
    model = _model(case)
    by_file: dict[str, list] = {}
    for a in view.attempts:
        by_file.setdefault(a.file, []).append(a)
    problems = _missing(case, view, by_file)
    resynced: dict[int, set] = {}
    for worker, d in view.resyncs:
        resynced.setdefault(worker, set()).add(d)
    finals: dict[str, list[int]] = {}
    # A worker's original file before its replacement's: the replacement takes over its walk.
    for f in sorted(case.files, key=lambda f: (f.worker, f.replacement, f.joined_step, f.name)):
        if f.name in by_file:
            problems += _file(case, view, model, f, by_file[f.name], resynced.get(f.worker, set()))
            last = by_file[f.name][-1].decision
            if last in ("commit", "skip"):  # a retry that ends a file: its worker died meanwhile
                finals.setdefault(last, []).append(f.worker)
    chosen = {}
    for a in view.active:
        if a.role == "contribute":
            chosen.setdefault(a.algorithm, []).append(a.worker)
    if len(chosen) > 1:  # one reduction: every contributor ran the same algorithm
        problems.append("contributors reduced with different algorithms: " + "; ".join(
            f"{alg} by [{' '.join(map(str, sorted(ws)))}]" for alg, ws in sorted(chosen.items(), key=str)))
    if len(finals) > 1:
        problems.append("workers disagree on the step's outcome: " + "; ".join(
            f"{d} by [{' '.join(map(str, sorted(ws)))}]" for d, ws in sorted(finals.items())))
    if problems:
        more = f" (+{len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        return False, "; ".join(problems[:SHOWN]) + more
    return True, f"{len(view.attempts)} records of {len(by_file)} workers hold to their roles"


def _missing(case, view, by_file) -> list[str]:
    """Live workers with no record of the step: a file owes every step from its joining to
    its close, or, if it stops unclosed, to its last record and its scheduled kill."""
    out = []
    for f in case.files:
        if f.name in by_file:
            continue
        if f.closed_steps is not None:
            end = case.steps
        else:
            kills = [at for rank, at in case.plan.kills if rank == f.worker and at >= f.joined_step]
            end = max(f.last_step + 1, min(kills, default=0))
        if f.joined_step <= view.step < end:
            out.append(f"worker {f.worker} ({f.name}) is alive at step {view.step} but recorded nothing for it")
    return out


def _file(case, view, model: Model, f, attempts: list, resynced: set) -> list[str]:
    """One worker file's records of the step, in the order it wrote them."""
    w, out = f.worker, []
    if f.name not in model.chain:
        model.chain[f.name] = view.start_digest if f.replacement else model.initial
        if f.replacement and (case.plan.recovery != "respawn" or (w, f.joined_step) not in case.plan.kills):
            out.append(f"{f.name}: a replacement for worker {w} at step {f.joined_step}, where no kill is scheduled")
    for i, a in enumerate(attempts):
        final_of_file = a is f.attempts[-1] and f.closed_steps is None  # a kill may have cut it short
        who = f"worker {w} step {view.step} attempt {a.attempt}"
        if a.attempt != attempts[0].attempt + i:  # a replacement may join at a later attempt number
            out.append(f"{who}: the step's attempts are numbered {[x.attempt for x in attempts]}, not consecutively")
        if a.role not in ROLES:
            out.append(f"{who}: unknown role {a.role!r}")
        if a.decision is None and not final_of_file:
            out.append(f"{who}: no decision recorded, yet the file goes on")
        if i < len(attempts) - 1 and a.decision != "retry":
            out.append(f"{who}: another attempt of the step follows its '{a.decision}'")
        if i == len(attempts) - 1 and a.decision == "retry" and not final_of_file:
            out.append(f"{who}: 'retry' but the step is never attempted again")
        if w not in a.members:
            out.append(f"{who}: not in its own membership {list(a.members)}")
        held = model.chain[f.name]
        if a.params_before != held and a.params_before not in resynced:
            out.append(f"{who}: starts from parameters {a.params_before[:12]}, not the ones it held ({held[:12]})")
        if tuple(a.cursor_before) != model.cursor[w]:
            out.append(f"{who}: cursor before {list(a.cursor_before)}, but its walk stands at "
                       f"{list(model.cursor[w])}")
        out += _role(model, who, w, a)
        if a.decision == "commit":
            model.chain[f.name] = a.params_after
            if a.role in ("contribute", "late"):
                model.cursor[w] = model.walker.slice_at(w, model.cursor[w])[1]
        else:
            model.chain[f.name] = a.params_before  # rolled back
    return out


def _role(model: Model, who: str, w: int, a) -> list[str]:
    """What the record's role and decision allow it to claim."""
    expected, after = model.walker.slice_at(w, model.cursor[w])
    contributing = set(a.contributing or ())
    out = []
    if a.role == "stall":
        if a.batch:
            out.append(f"{who}: stalled, yet claims a batch of {len(a.batch)} samples")
        if tuple(a.cursor_after) != tuple(a.cursor_before):
            out.append(f"{who}: stalled, yet its cursor moved {list(a.cursor_before)} -> {list(a.cursor_after)}")
        if a.params_after != a.params_before:
            out.append(f"{who}: stalled, yet its parameters changed")
        if w in contributing:
            out.append(f"{who}: stalled, yet counted as contributing")
    elif a.decision == "commit":
        if tuple(a.cursor_after) != after:
            out.append(f"{who}: cursor after {list(a.cursor_after)}, but one batch moves its walk to {list(after)}")
        if a.role == "late" and w in contributing:
            out.append(f"{who}: dropped as late, yet counted as contributing")
        if a.role == "contribute":
            out += _contributor(who, w, a, contributing)
    elif a.batch:  # an aborted attempt: what it claims must be the batch at its cursor
        if len(a.batch) != len(expected) or not np.array_equal(np.asarray(a.batch, dtype=np.int64), expected):
            out.append(f"{who}: aborted with a batch that is not the slice at its cursor")
        if tuple(a.cursor_after) not in (tuple(a.cursor_before), after):
            out.append(f"{who}: aborted with cursor after {list(a.cursor_after)}")
    return out


def _contributor(who: str, w: int, a, contributing: set) -> list[str]:
    """A committed contributor's record is the step's evidence: complete, and its own."""
    out = []
    if a.contributing is None or a.effective_batch is None or a.pieces is None or a.total_length is None:
        out.append(f"{who}: a committed contribution without its reduction's outcome")
    elif w not in contributing:
        out.append(f"{who}: contributed, yet missing from its own contributing set {sorted(contributing)}")
    if w not in a.group:
        out.append(f"{who}: contributed outside its own step group {list(a.group)}")
    if a.full_after is None:
        out.append(f"{who}: live and committing, yet recorded no full parameter copy")
    if a.losses is None:
        out.append(f"{who}: live and committing, yet recorded no per-sample losses")
    elif len(floats32(a.losses)) != len(a.batch):
        out.append(f"{who}: {len(floats32(a.losses))} per-sample losses for a batch of {len(a.batch)}")
    return out
