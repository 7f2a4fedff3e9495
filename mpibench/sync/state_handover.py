"""Handing optimizer state over to a new layout of owners (the recovery HSDP's replicas allow).

After a shrink or a respawn the shards are laid out afresh and each member
must hold the state of the shards it now owns. Every member still holds the
state of the shards it owned before (rolled back to the last commit with the
parameters; a replacement holds none). Each member sends every other member,
for each piece that member now owns, the values it holds there (every row of
the state: momentum's velocity, or Adam's m, v and step count) and a mask of
which it holds, plus one flag: whether it holds any state at all. Each
member then takes every element of its pieces from itself or the first
member (in communicator rank order) that holds it: every holder's bits are
the same (replicas step identically), so the state is copied, never rebuilt.

An element of an owned piece that nobody holds while some member holds
state means every holder of it died: :class:`StateLost` is raised (the run
fails loudly) rather than restart that state from zero. If nobody holds any
state the optimizer has not stepped yet, and nothing is handed over.

The messages go through the communicator like any step's, so a death
during the handover aborts the attempt (the rollback restores the state held
before it) and the next membership hands over again.
"""
from __future__ import annotations

import numpy as np

from .rounds import Round, compact, run_rounds


class StateLost(RuntimeError):
    """Optimizer state that no member holds any more."""


def held_vector(optimizer, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(the state this member holds by global offset, one row per state field (``optimizer.rows``:
    momentum's velocity; Adam's m, v and t), zeros elsewhere; the mask of what it holds)."""
    values = np.zeros((getattr(optimizer, "rows", 1), n), dtype=np.float32)
    mask = np.zeros(n, dtype=np.float32)
    for offset, rows in optimizer.held_rows():
        values[:, offset:offset + rows.shape[1]] = rows
        mask[offset:offset + rows.shape[1]] = 1.0
    return values, mask


def _message(values, mask, pieces, holds_any: bool) -> np.ndarray:
    """``[every row of each piece..., mask of each piece..., holds_any]``."""
    parts = [values[:, o:o + w].ravel() for o, w in pieces] + [mask[o:o + w] for o, w in pieces]
    return np.concatenate(parts + [np.array([1.0 if holds_any else 0.0], dtype=np.float32)])


def hand_over(comm, backend, optimizer, owner_pieces: dict, mine: list, tag: int, told=None) -> None:
    """Leave ``optimizer`` holding exactly the state of ``mine`` (the pieces this rank now owns),
    taken from whichever member holds it. ``owner_pieces``: communicator rank -> its pieces.
    ``told`` (the self-test's defects only) turns ``(values, mask, holds_any)`` into what the
    messages to the other members say; by default they say what this member holds."""
    n = len(optimizer.params)
    values, mask = held_vector(optimizer, n)
    rows = values.shape[0]
    holds_any = bool(optimizer.held())
    said = told(values, mask, holds_any) if told else (values, mask, holds_any)
    width = sum(w for _, w in mine)
    rnd, inbox = Round(tuple(r for r in owner_pieces if r != comm.rank)), {}
    for rank in sorted(owner_pieces):
        if rank == comm.rank:
            continue
        rnd.send(_message(said[0], said[1], owner_pieces[rank], said[2]), rank)
        inbox[rank] = np.empty((rows + 1) * width + 1, dtype=np.float32)
        rnd.recv(inbox[rank], rank)
    rounds = compact([rnd])
    if rounds:  # a lone member has nobody to ask
        run_rounds(comm, backend, rounds, tag)
    anyone = holds_any or any(m[-1] for m in inbox.values())
    if not anyone:
        optimizer.take_rows({})
        return
    slices, cursor = {}, 0
    for offset, length in mine:
        got = values[:, offset:offset + length].copy()
        have = mask[offset:offset + length].astype(bool)
        for rank in sorted(inbox):
            their_values = inbox[rank][rows * cursor:rows * (cursor + length)].reshape(rows, length)
            their_mask = inbox[rank][rows * width + cursor:rows * width + cursor + length].astype(bool)
            take = their_mask & ~have
            got[:, take] = their_values[:, take]
            have |= take
        if not have.all():
            first = offset + int(np.argmin(have))
            raise StateLost(f"the optimizer state of element {first} (in [{offset}, {offset + length})) "
                            "is held by no member: every holder of it died before it was handed over")
        if length:
            slices[offset] = got
        cursor += length
    optimizer.take_rows(slices)
