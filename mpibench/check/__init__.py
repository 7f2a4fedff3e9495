"""The checker: judges a run from its recorded history, apart from the system under test.

It reads ``DIR/run.json`` and ``DIR/history/CASE_ID/`` (``case.json`` and one
JSON-lines file per worker process), rebuilds from the seed by its own code
the data set, the shards and each shard's epoch orders (:mod:`.seeding`),
computes who should have contributed to each step from the schedule
(:mod:`.oracle`), walks each shard (:mod:`.walk`), compares each update with
a float64 reference (:mod:`.reference`) and judges six invariants
(:mod:`.invariants`). It imports nothing from the production path (sync
strategies, kernels, model, worker, data, seeds, faults, runner, suite), so a
bug there cannot hide itself here; ``tests/test_check_imports.py`` keeps it so.
"""
from __future__ import annotations

from .outputs import exit_status, invariants_csv, verdict_json, verdict_line, write_outputs
from .verdict import CaseVerdict, Row, RunVerdict, Violation, check_case, check_run

__all__ = ["CaseVerdict", "Row", "RunVerdict", "Violation", "check_case", "check_run", "exit_status",
           "invariants_csv", "verdict_json", "verdict_line", "write_outputs"]
