"""Reading a case's history: ``case.json`` and every worker's JSON-lines file.

Only the format (docs/outputs.md, "The history") is shared with the writer, never code.
A file whose last line is cut in half (its process was killed while writing)
keeps every complete line; anything else that cannot be read makes the case
impossible to judge (:class:`CannotJudge`), never a pass.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from dataclasses import dataclass, field

import numpy as np
import xxhash

SCHEMA = 4
SCHEMAS = (2, 3, 4)  # 3: an attempt's bulk may lie in the file's companion (``FILE.jsonl.bin``);
#  4: digests are "xxh3:" + xxh3-128 hex instead of bare blake2b-128 hex
COMPANION = ".bin"
FILE_NAME = re.compile(r"^worker-(\d+)(?:\.joined-(\d{4}))?(?:\.(\d+))?\.jsonl$")


class CannotJudge(Exception):
    """The history is missing or unreadable: the verdict is unknown."""


@dataclass(frozen=True)
class Attempt:
    step: int
    attempt: int
    role: str
    members: tuple
    group: tuple
    cursor_before: tuple
    cursor_after: tuple
    batch: tuple
    params_before: str
    params_after: str
    contributing: tuple | None
    effective_batch: int | None
    pieces: tuple | None
    total_length: int | None
    loss_mean: float | None
    loss_var: float | None
    error: str | None
    full_after: str | None  # the worker's parameters after the step (contributors)
    losses: str | None  # the worker's per-sample float32 losses (contributors)
    decision: str | None = None  # None: the worker never returned from the agreement
    algorithm: str | None = None  # what a choosing strategy reduced with
    optimizer: tuple | None = None  # (offset, length, base64 float32 state) held after the step
    sharding: dict | None = None  # sharded strategies' evidence (read by check/sharded.py)
    file: str = ""
    worker: int = -1


@dataclass
class WorkerFile:
    name: str
    worker: int
    joined_step: int
    replacement: bool
    attempts: list = field(default_factory=list)
    resyncs: list = field(default_factory=list)  # (step, digest)
    closed_steps: int | None = None  # None: the file stops without "close"

    @property
    def last_step(self) -> int:
        return self.attempts[-1].step if self.attempts else self.joined_step - 1


XXH3 = "xxh3:"  # the prefix of a schema-4 digest; earlier schemas wrote bare blake2b-128 hex


def digest(raw: bytes, like: str = "") -> str:
    """The digest of ``raw`` in the form of ``like`` (a digest from the history, or a case's
    :func:`form`): xxh3-128 behind its prefix, else blake2b-128. A recorded digest of any other
    form is compared with the blake2b one and so differs: never a match by default."""
    if like.startswith(XXH3):
        return XXH3 + xxhash.xxh3_128(raw).hexdigest()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def form(schema) -> str:
    """The digest form a history of ``schema`` writes (an argument ``like`` for :func:`digest`)."""
    return XXH3 if isinstance(schema, int) and schema >= 4 else ""


def full_params(b64: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype="<f4").astype(np.float32)


floats32 = full_params  # the per-sample losses use the same encoding


def params_digest(params: np.ndarray, like: str = "") -> str:
    return digest(np.ascontiguousarray(params, dtype="<f4").tobytes(), like)


def read_json(path: str, missing: str, unreadable: str) -> dict:
    """A JSON file the verdict needs; CannotJudge (``missing``, or ``unreadable: why``) if it fails."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise CannotJudge(missing) from None
    except (OSError, ValueError) as exc:
        raise CannotJudge(f"{unreadable} unreadable: {exc}") from None


def read_case_json(case_dir: str) -> dict:
    path = os.path.join(case_dir, "case.json")
    info = read_json(path, f"{_short(path)} missing", _short(path))
    if info.get("schema") not in SCHEMAS:
        raise CannotJudge(f"{_short(path)} has schema {info.get('schema')!r}, this checker reads {SCHEMA}")
    return info


def read_worker_files(case_dir: str) -> list[WorkerFile]:
    files = []
    for name in sorted(os.listdir(case_dir)):
        if FILE_NAME.match(name):
            files.append(read_worker_file(os.path.join(case_dir, name)))
    return files


def read_worker_file(path: str) -> WorkerFile:
    with open(path) as f:
        lines = f.read().split("\n")
    records = []
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            if i == len(lines) - 1:  # the last line, cut short by a kill (no newline after it)
                break
            raise CannotJudge(f"{_short(path)} line {i + 1} is not JSON") from None
    if not records or records[0].get("kind") != "open" or records[0].get("schema") not in SCHEMAS:
        raise CannotJudge(f"{_short(path)} does not start with an 'open' record of schema "
                          f"{' or '.join(map(str, SCHEMAS))}")
    return _build(path, records, _Companion(path))


class _Companion:
    """A worker file's companion of raw float32 bulk, read once when a record points into it."""

    def __init__(self, path: str):
        self.path, self._data = path + COMPANION, None

    def base64(self, place: dict) -> str:
        """The floats at ``{"at": offset, "floats": count}``, in the line's own encoding (base64)."""
        if self._data is None:
            try:
                with open(self.path, "rb") as f:
                    self._data = f.read()
            except OSError as exc:
                raise CannotJudge(f"{_short(self.path)} unreadable: {exc.strerror or exc}") from None
        at, floats = int(place["at"]), int(place["floats"])
        if at < 0 or floats < 0 or at + 4 * floats > len(self._data):
            raise CannotJudge(f"{_short(self.path)} holds {len(self._data)} bytes; a record needs "
                              f"{4 * floats} at {at}")
        return base64.b64encode(self._data[at:at + 4 * floats]).decode("ascii")

    def resolve(self, value):
        return self.base64(value) if isinstance(value, dict) else value


def _build(path: str, records: list[dict], companion: _Companion | None = None) -> WorkerFile:
    head = records[0]
    wf = WorkerFile(os.path.basename(path), int(head["worker"]), int(head["joined_step"]), bool(head["replacement"]))
    pending = None  # the last attempt's record, until its decision (or the next record) arrives
    try:
        for r in records[1:]:
            kind = r["kind"]
            if kind == "decision":
                if pending is None or (pending["step"], pending["attempt"]) != (r["step"], r["attempt"]):
                    raise CannotJudge(f"{_short(path)}: decision for step {r['step']} without its attempt")
                if r["decision"] not in DECISIONS:
                    raise ValueError(f"decision {r['decision']!r}")
                wf.attempts.append(_attempt(pending, wf, r["decision"], companion))
                pending = None
                continue
            if pending is not None:  # an attempt whose agreement never returned
                wf.attempts.append(_attempt(pending, wf, None, companion))
                pending = None
            if kind == "attempt":
                pending = r
            elif kind == "resync":
                wf.resyncs.append((int(r["step"]), r["params"]))
            elif kind == "close":
                wf.closed_steps = int(r["steps"])
            else:
                raise CannotJudge(f"{_short(path)}: unknown record kind {kind!r}")
        if pending is not None:
            wf.attempts.append(_attempt(pending, wf, None, companion))
    except (KeyError, TypeError, ValueError) as exc:
        raise CannotJudge(f"{_short(path)}: malformed record ({type(exc).__name__}: {exc})") from None
    return wf


DECISIONS = ("commit", "retry", "skip")


def _tuple(value):
    return None if value is None else tuple(tuple(v) if isinstance(v, list) else v for v in value)


def _attempt(r: dict, wf: WorkerFile, decision: str | None, companion: _Companion | None = None) -> Attempt:
    bulk = companion.resolve if companion is not None else (lambda v: v)
    return Attempt(
        step=int(r["step"]), attempt=int(r["attempt"]), role=r["role"], members=tuple(r["members"]),
        group=tuple(r["group"]), cursor_before=tuple(r["cursor_before"]), cursor_after=tuple(r["cursor_after"]),
        batch=tuple(r["batch"]), params_before=r["params_before"], params_after=r["params_after"],
        contributing=None if r["contributing"] is None else tuple(r["contributing"]),
        effective_batch=r["effective_batch"], pieces=_tuple(r["pieces"]),
        total_length=r["total_length"], loss_mean=r["loss_mean"], loss_var=r["loss_var"], error=r["error"],
        full_after=bulk(r["full_after"]), losses=bulk(r["losses"]), decision=decision, algorithm=r.get("algorithm"),
        optimizer=_tuple(r.get("optimizer")), sharding=r.get("sharding"), file=wf.name, worker=wf.worker)


def _short(path: str) -> str:
    """``history/CASE/FILE``: enough to find it in the run folder."""
    parts = os.path.normpath(path).split(os.sep)
    return os.sep.join(parts[-3:])
