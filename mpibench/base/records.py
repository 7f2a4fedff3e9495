"""CSV record files written row by row, so a run that dies keeps what it wrote.

Column lists here are the output contract (see docs/outputs.md). Columns
whose name ends in ``_s`` hold wall-clock seconds; every other column is a
pure function of the run's seed and configuration.
"""
from __future__ import annotations

import csv
import os

import numpy as np
from typing import Iterable

SCHEMA_VERSION = 1
# A case run inside a batch job writes the exit status its own `run` would have had here.
STATUS_FILE = "case-status.json"

STEP_COLUMNS = ["scenario", "strategy", "recovery", "step", "epoch", "members", "contributing",
                "excluded", "effective_batch", "epoch_ends", "loss_mean", "loss_var",
                "step_time_s", "sync_time_s", "check_time_s", "algorithm",
                "compute_s", "commit_s", "evidence_s"]  # the step's parts (engine/steprecord.py)
# invariants.csv is written by the checker (mpibench.check.outputs), after the run.
INVARIANT_COLUMNS = ["scenario", "strategy", "recovery", "step", "invariant", "passed", "detail"]
FAULT_COLUMNS = ["scenario", "strategy", "step", "phase", "rank", "kind", "detail"]
BENCH_COLUMNS = ["strategy", "ranks", "bytes", "iterations", "time_min_s", "time_avg_s",
                 "time_max_s", "algbw_gbps", "busbw_gbps", "errors", "tag"]
# Device back-ends only: the recording worker's host/device copies and MPI hand-overs per step
# (see mpibench.kernels.counts).
TRANSFER_COLUMNS = ["scenario", "strategy", "step", "worker", "policy", "h2d", "h2d_bytes", "d2h",
                    "d2h_bytes", "mpi_out", "mpi_out_bytes", "mpi_in", "mpi_in_bytes", "syncs"]
SWEEP_COLUMNS = ["case", "seed", "workers", "strategy", "recovery", "faults", "steps", "checks",
                 "violations", "first_violation", "replay"]

# bench.csv's columns after the first eleven, which keep their order (see docs/benchmarks.md)
BENCH_COLUMNS = BENCH_COLUMNS + ["label", "count", "dtype", "op", "in_place", "warmup", "rounds",
                                 "round_p90_s", "round_cv_pct", "vs_blocking", "model_ratio", "note"]


def ranks_text(ranks: Iterable[int]) -> str:
    """Rank sets as space-separated numbers, sorted."""
    return " ".join(str(r) for r in sorted(ranks))


def format_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, np.integer):
        return str(int(value))
    if isinstance(value, (set, frozenset, tuple, list)):
        return ranks_text(value)
    return str(value)


class CsvLog:
    """One CSV file, header first, each row flushed as it is written."""

    def __init__(self, path: str, columns: list[str], append: bool = False):
        self.path, self.columns = path, columns
        exists = append and os.path.exists(path) and os.path.getsize(path) > 0
        self._file = open(path, "a" if append else "w", newline="")
        self._writer = csv.writer(self._file)
        if not exists:
            self._writer.writerow(columns)
            self._file.flush()

    def write(self, row: dict) -> None:
        unknown = set(row) - set(self.columns)
        if unknown:
            raise KeyError(f"{os.path.basename(self.path)} has no columns {sorted(unknown)}")
        self._writer.writerow([format_value(row.get(c)) for c in self.columns])
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class NullLog:
    """Stands in for a CsvLog on ranks that do not write."""

    def write(self, row: dict) -> None:
        pass

    def close(self) -> None:
        pass


class LazyCsvLog:
    """A CsvLog opened for appending on its first row (a process that may become the writer,
    or a file that only some runs have)."""

    def __init__(self, path: str, columns: list[str]):
        self.path, self.columns = path, columns
        self._log: CsvLog | None = None

    def write(self, row: dict) -> None:
        if self._log is None:
            self._log = CsvLog(self.path, self.columns, append=True)
        self._log.write(row)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()


class RunRecords:
    """The record files of one output folder.

    Every process of a job holds one: the first rank of the job creates the
    files (``RunRecords(out)``); every other process, replacements included,
    holds :meth:`joining` records that open the files for appending only when
    it writes its first row. Rows are written by whichever process is rank 0
    of the current membership; each row is flushed as it is written and the
    files are opened with ``O_APPEND``, so when the writer dies and the next
    one takes over, nothing written is lost or written twice. The per-worker
    history and the checker's verdict.json and invariants.csv are written
    elsewhere (:mod:`mpibench.engine.history`, :mod:`mpibench.check`).
    """

    def __init__(self, out_dir: str | None, append: bool = False, lazy: bool = False):
        self.out_dir = out_dir
        if out_dir is None:
            self.steps = self.faults = self.transfers = NullLog()
            return
        paths = [os.path.join(out_dir, name) for name in ("steps.csv", "faults.csv")]
        columns = [STEP_COLUMNS, FAULT_COLUMNS]
        self.transfers = LazyCsvLog(os.path.join(out_dir, "transfers.csv"), TRANSFER_COLUMNS)
        if lazy:
            self.steps, self.faults = (LazyCsvLog(p, c) for p, c in zip(paths, columns))
            return
        os.makedirs(out_dir, exist_ok=True)
        self.steps, self.faults = (CsvLog(p, c, append) for p, c in zip(paths, columns))

    @classmethod
    def joining(cls, out_dir: str | None) -> "RunRecords":
        """Records of a process that writes only if it becomes rank 0 of the membership."""
        return cls(out_dir, lazy=True)

    def close(self) -> None:
        for log in (self.steps, self.faults, self.transfers):
            log.close()
