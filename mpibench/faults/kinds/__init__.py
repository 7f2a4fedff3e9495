"""The fault kinds: one module per kind, and the one ordered list of them, :data:`KINDS`.

A kind's module holds everything about that kind of fault that is data:

* ``NAME`` (also its TOML table, ``[[NAME]]``, and its ``faults.csv`` kind) and
  ``EVENT``, the frozen dataclass of one event (with ``kind = NAME``, ``text()``
  and ``rank``/step fields of its own);
* ``check_event(event, n)`` and ``check_schedule(schedule)``: validation, a
  ValueError naming the problem in one line;
* ``TOML_FIELDS`` (field -> required), ``from_toml(entry, where, n)``,
  ``to_toml(event)`` and ``TOML_DOC``;
* ``DRAW_ORDER`` and ``draw(rng, draft)``: its share of a random schedule
  (:class:`.common.Draft`);
* ``first_step``, ``last_step``, ``shrink_moves`` (smaller variants, one move
  at a time), ``shifted(event, by)`` and ``without_worker(event, gone,
  renumber)``: what the minimiser needs;
* ``acts_at(event)``: the phase it acts at; ``NEEDS_ULFM``: whether survivors
  must recover from lost processes;
* ``GLYPH`` and ``COLOUR``: its mark on the report page;
* ``on_mark(event, injector, step, phase)`` or None: its effect, called by the
  communicator wrapper at every phase mark of the worker loop. The built-in
  kinds' effects are None here and live in the wrapper itself (see
  ARCHITECTURE.md, "A fault kind");
* ``log_row(event, step)`` or None: the ``faults.csv`` row (phase, rank,
  detail) of a committed step, or None for no row; the built-in kinds' rows
  come from the recovery layer's own paths (:mod:`mpibench.faults.fault_log`).

The order of :data:`KINDS` is the canonical order of a schedule's events (kills,
delays, partitions, then outside kinds in the order they were named). Outside
kinds join it when this package is imported: the modules named (comma
separated) in the environment variable ``MPIBENCH_FAULT_KINDS`` and those of
the ``mpibench.fault_kinds`` entry point group (value: a module path). The
variable reaches every rank, on MPI and on the simulated engine, because the
launcher passes the environment on.
"""
from __future__ import annotations

import importlib
import os
import sys

from . import delay, kill, partition

ENV_VAR = "MPIBENCH_FAULT_KINDS"
ENTRY_POINT_GROUP = "mpibench.fault_kinds"
PARTS = ("NAME", "EVENT", "check_event", "check_schedule", "TOML_FIELDS", "TOML_DOC", "from_toml", "to_toml",
         "DRAW_ORDER", "draw", "first_step", "last_step", "shrink_moves", "shifted", "without_worker",
         "acts_at", "NEEDS_ULFM", "GLYPH", "COLOUR", "on_mark", "log_row")
BUILTIN = (kill, delay, partition)
KINDS: list = list(BUILTIN)


def missing_parts(module) -> list[str]:
    """The parts of :data:`PARTS` that ``module`` lacks."""
    return [p for p in PARTS if not hasattr(module, p)]


def register(module) -> None:
    """Add an outside kind's module to :data:`KINDS` (ValueError when it is incomplete or its name taken)."""
    where = f"fault kind module {module.__name__!r}"
    lacking = missing_parts(module)
    if lacking:
        raise ValueError(f"{where} lacks {', '.join(lacking)}")
    if module in KINDS:
        return
    if any(k.NAME == module.NAME for k in KINDS):
        raise ValueError(f"{where}: the kind name {module.NAME!r} is taken")
    if getattr(module.EVENT, "kind", None) != module.NAME:
        raise ValueError(f"{where}: its EVENT's kind must be {module.NAME!r}")
    KINDS.append(module)


def _outside_modules() -> list[str]:
    named = [m.strip() for m in os.environ.get(ENV_VAR, "").split(",") if m.strip()]
    try:
        from importlib.metadata import entry_points

        named += [ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)]
    except Exception:  # noqa: BLE001 - no metadata: no installed kinds
        pass
    return named


def _load_outside() -> None:
    """Register the outside kinds. A module that cannot be imported or is incomplete is the
    user's input: one line and exit status 2, before any command starts (this runs on import)."""
    for name in _outside_modules():
        try:
            module = importlib.import_module(name)
            register(module)
        except Exception as exc:  # noqa: BLE001 - any failure here is the user's input
            detail = (str(exc) if isinstance(exc, ValueError)
                      else f"cannot import fault kind module {name!r} ({type(exc).__name__}: {exc})")
            print(f"mpibench: error: {ENV_VAR}: {detail}", file=sys.stderr)
            raise SystemExit(2) from None


def by_name(name: str):
    """The kind called ``name``, or None."""
    for k in KINDS:
        if k.NAME == name:
            return k
    return None


def of(event):
    """The kind of ``event``; ValueError for an event of no registered kind."""
    k = by_name(getattr(event, "kind", None))
    if k is None or not isinstance(event, k.EVENT):
        raise ValueError(f"unknown event {event!r}")
    return k


def names() -> list[str]:
    return [k.NAME for k in KINDS]


_load_outside()
