"""The record of ``auto``'s choices: which candidate reduces a bucket of a given width.

``auto`` times its candidates once per (ranks, bucket width, dtype) and writes the
winner here; every later run on the machine, and every replay, reads the record
instead of timing again. The choice fixes the summation order, so with it the
correctness rows are a function of the seed, the options and this record (two
timings of close candidates could otherwise choose differently and give other
bits). Open MPI's tuned component and FFTW's wisdom keep such a table for the
same reason.

The record is one JSON file: ``$MPIBENCH_AUTO_CHOICES``, else ``auto-choices.json``
in ``$MPIBENCH_CACHE`` or ``$XDG_CACHE_HOME/mpibench`` (``~/.cache/mpibench``). To
replay a run on another machine with its choices, copy the file there and point
``MPIBENCH_AUTO_CHOICES`` at it; to time afresh, remove it. A record that cannot be
read counts as empty and one that cannot be written is left as it was: the run
goes on, and its choice is still in its ``algorithm`` column and its history.

An engine whose timings are not this machine's (the simulated engine: virtual time) keeps
its record apart (:func:`kept_apart`): in memory for the duration of its job, starting from
what it is given, never read from or written to the file real runs read.
"""
from __future__ import annotations

import contextlib
import json
import os

import numpy as np

SCHEMA = 1


def record_path() -> str:
    given = os.environ.get("MPIBENCH_AUTO_CHOICES", "").strip()
    if given:
        return given
    root = os.environ.get("MPIBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mpibench")
    return os.path.join(root, "auto-choices.json")


def key(ranks: int, width: int, dtype) -> str:
    return f"p={ranks} width={width} dtype={np.dtype(dtype).name}"


def _read(path: str) -> dict:
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    choices = doc.get("choices") if isinstance(doc, dict) and doc.get("schema") == SCHEMA else None
    return {str(k): str(v) for k, v in choices.items()} if isinstance(choices, dict) else {}


_apart: dict | None = None  # the record of an engine kept apart (kept_apart), else None


@contextlib.contextmanager
def kept_apart(initial=None):
    """Read and store choices in a record of their own for the duration, starting from
    ``initial`` (entry -> name); the machine's file is neither read nor written meanwhile."""
    global _apart
    saved, _apart = _apart, dict(initial or {})
    try:
        yield _apart
    finally:
        _apart = saved


def read_record(path: str) -> dict:
    """The choices a record file holds (empty when it cannot be read)."""
    return _read(path)


def lookup(entry: str) -> str | None:
    """The recorded candidate name for ``entry`` (a :func:`key`), or None."""
    if _apart is not None:
        return _apart.get(entry)
    return _read(record_path()).get(entry)


def store(entry: str, name: str) -> None:
    """Add ``entry -> name`` to the record (merged with what is there, tmp file + rename)."""
    if _apart is not None:
        _apart[entry] = name
        return
    path = record_path()
    choices = _read(path)
    choices[entry] = name
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(tmp, "w") as f:
            json.dump({"schema": SCHEMA, "choices": dict(sorted(choices.items()))}, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
