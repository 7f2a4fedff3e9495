"""The history a worker leaves behind: one JSON line per attempt, decision and resync.

Every worker process appends what it did to its own file under
``DIR/history/CASE_ID/`` (the format is documented in docs/outputs.md, "The history"; what
each role's record must hold is ``mpibench/check/CONTRACT.md``): an
``attempt`` record (batch, cursors, parameter digests, what the reduction
said) written and flushed *before* the commit agreement of that attempt, so
a worker killed after committing still leaves its evidence; the
``decision`` the agreement returned; a ``resync`` when it took the
committing side's parameters; ``close`` when the case ended normally. A
killed worker's file simply stops.

Every contributing worker writes the same evidence, so no rank is slower
than the others for being the recorder: the digests, its own per-sample
losses (float32, a few bytes) and one full copy of the parameters it holds
after the reduction. The copy before the step is not written: it is the
previous commit's copy (or the seed's initial parameters), which the
checker keeps as it walks the steps, so every step can be judged offline at
any ``--check-every`` from one copy per contributor and step.

The bulk of an attempt (the parameter copy and the losses) goes into the file's
companion ``worker-W.jsonl.bin`` as raw float32 little-endian bytes, written before
the line that names its place (``{"at": byte offset, "floats": count}``): no
base64 and no JSON encoding of the parameters inside the step.

Nothing here judges anything: the checker (:mod:`mpibench.check`) reads these
files afterwards, on its own.
"""
from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass

import numpy as np
import xxhash

SCHEMA = 4  # 2: full_after from every contributor, no full_before, per-sample losses; 3: bulk in a companion file;
#  4: digests are xxh3-128 ("xxh3:" + hex), about 40x cheaper per step than blake2b-128 on a 1 MB vector
COMPANION = ".bin"  # worker-W.jsonl's raw float32 bulk lives in worker-W.jsonl.bin


def case_id(index: int, scenario: str, strategy: str, recovery: str) -> str:
    """``NNN-SCENARIO-STRATEGY-RECOVERY``; a TOML scenario is named by its file stem."""
    name = os.path.splitext(os.path.basename(scenario))[0] if scenario.endswith(".toml") else scenario
    return f"{index:03d}-{name}-{strategy}-{recovery}"


def _le32(params: np.ndarray) -> bytes:
    return np.ascontiguousarray(params, dtype="<f4").tobytes()


DIGEST_PREFIX = "xxh3:"


def params_digest(params: np.ndarray) -> str:
    """xxh3-128 of the float32 little-endian bytes: a bitwise fingerprint (replicas, chains), not a
    defence against a forger; it runs on every contributor every step, so it must be cheap."""
    return DIGEST_PREFIX + xxhash.xxh3_128(_le32(params)).hexdigest()


def params_b64(params: np.ndarray) -> str:
    return base64.b64encode(_le32(params)).decode("ascii")


class DigestCache:
    """:func:`params_digest` that remembers the last parameters it hashed, bit for bit.

    An attempt's ``params_before`` is, on the common path, the previous attempt's
    ``params_after``: comparing the bits (a memory pass) replaces hashing them again. Any
    other bits (a rollback, a resync, NaNs, a negative zero) are hashed."""

    def __init__(self):
        self._bits: np.ndarray | None = None
        self._digest = ""

    def __call__(self, params: np.ndarray) -> str:
        bits = np.ascontiguousarray(params, dtype="<f4").view(np.uint32)
        if self._bits is not None and self._bits.shape == bits.shape and np.array_equal(self._bits, bits):
            return self._digest
        self._digest = params_digest(params)
        if self._bits is None or self._bits.shape != bits.shape:
            self._bits = np.empty_like(bits)
        np.copyto(self._bits, bits)
        return self._digest


def count_value(count) -> int | float:
    """The reduced sample count as recorded: an int, or the float itself when it is not a
    whole finite number (NaN, inf: the record must say what the buffer held, not crash)."""
    value = float(count)
    return int(value) if np.isfinite(value) and value == int(value) else value


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt of one step on one worker (see docs/outputs.md for each field)."""

    step: int
    attempt: int
    role: str
    members: list
    group: list
    shard: int
    cursor_before: list
    cursor_after: list
    batch: list
    params_before: str
    params_after: str
    contributing: list | None
    effective_batch: int | None
    pieces: list | None
    total_length: int | None
    loss_mean: float | None
    loss_var: float | None
    error: str | None
    # Bulk: an array goes to the companion file; text (base64 float32) stays in the line
    full_after: np.ndarray | str | None  # the parameters after the reduction (contributors)
    losses: np.ndarray | str | None  # per-sample losses of this worker's batch (contributors)
    algorithm: str | None = None  # what a choosing strategy reduced with (auto:rd, hier[...])
    optimizer: list | None = None  # [offset, length, base64 float32 state..., t (adam)] held after the step
    sharding: dict | None = None  # sharded strategies: shards, owners, owned, stepped and gathered digests


BULK_FIELDS = ("full_after", "losses")  # an attempt's large fields: arrays go to the companion file


class History:
    """One worker process's history file (appended line by line, flushed after each; no fsync:
    a killed process's lines are in the kernel already, and the host is not expected to crash)."""

    keeps = True  # the trainer builds an attempt's record (digests, copies) only for a history that keeps it

    def __init__(self, case_dir: str, worker: int, joined_step: int = 0, replacement: bool = False):
        os.makedirs(case_dir, exist_ok=True)
        self.path = _free_name(case_dir, worker, joined_step if replacement else None)
        self._file = open(self.path, "xb")
        self._bulk = open(self.path + COMPANION, "xb")
        self._bulk_at = 0
        self._line({"kind": "open", "schema": SCHEMA, "worker": worker, "joined_step": joined_step,
                    "replacement": replacement})

    def _line(self, record: dict) -> None:
        self._file.write((json.dumps(record, separators=(",", ":")) + "\n").encode())
        self._file.flush()

    def attempt(self, record: AttemptRecord) -> None:
        """One line; an array in a bulk field is written to the companion file first (flushed
        before the line, so a line never names bytes that are not there) and the line holds
        its place; text or None there goes through the encoder like every other field."""
        fields = {"kind": "attempt", **vars(record)}  # shallow: asdict deep-copies every list
        wrote = False
        for name in BULK_FIELDS:
            value = fields[name]
            if isinstance(value, np.ndarray):
                data = np.ascontiguousarray(value, dtype="<f4")
                self._bulk.write(data)  # the buffer itself: no copy
                fields[name] = {"at": self._bulk_at, "floats": int(data.size)}
                self._bulk_at += data.nbytes
                wrote = True
        if wrote:
            self._bulk.flush()
        self._line(fields)

    def decision(self, step: int, attempt: int, decision: str) -> None:
        self._line({"kind": "decision", "step": step, "attempt": attempt, "decision": decision})

    def resync(self, step: int, params: np.ndarray) -> None:
        self._line({"kind": "resync", "step": step, "params": params_digest(params)})

    def close(self, steps: int) -> None:
        if not self._file.closed:
            self._line({"kind": "close", "steps": steps})
            self._file.close()
            self._bulk.close()


class NoHistory:
    """Stands in for :class:`History` where no history is kept (calibration, scaling)."""

    path = None
    keeps = False

    def attempt(self, record: AttemptRecord) -> None:
        pass

    def decision(self, step: int, attempt: int, decision: str) -> None:
        pass

    def resync(self, step: int, params) -> None:
        pass

    def close(self, steps: int) -> None:
        pass


def _free_name(case_dir: str, worker: int, joined_step: int | None) -> str:
    stem = f"worker-{worker}" if joined_step is None else f"worker-{worker}.joined-{joined_step:04d}"
    path, n = os.path.join(case_dir, stem + ".jsonl"), 1
    while os.path.exists(path):
        n += 1
        path = os.path.join(case_dir, f"{stem}.{n}.jsonl")
    return path


def schedule_data(schedule) -> dict:
    """A fault schedule as the plain data of ``case.json``."""
    return {"kills": [{"rank": k.rank, "step": k.step, "phase": k.phase, "messages": k.messages}
                      for k in schedule.kills],
            "delays": [{"rank": d.rank, "steps": list(d.steps), "seconds": d.seconds, "where": d.where}
                       for d in schedule.delays],
            "partitions": [{"sides": [list(s) for s in p.sides], "start": p.from_step, "end": p.to_step}
                           for p in schedule.partitions]}


def write_case(case_dir: str, info: dict) -> str:
    """``case.json`` (tmp file + rename, so a reader never sees half of it)."""
    os.makedirs(case_dir, exist_ok=True)
    path = os.path.join(case_dir, "case.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"schema": SCHEMA, **info}, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    return path
