"""lab/studies/sharded_memory.py: new rows replace those of the same strategy, size and momentum only."""
from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load():
    spec = importlib.util.spec_from_file_location("sharded_memory", ROOT / "lab" / "studies" / "sharded_memory.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_of_other_strategies_are_kept_and_the_same_key_replaced(tmp_path):
    m = load()
    path = tmp_path / "mem.csv"
    base = {c: "1" for c in m.COLUMNS}

    def row(strategy, ranks, state):
        return {**base, "strategy": strategy, "ranks": ranks, "momentum": 0.9, "optimizer_state_bytes": state}

    m.write(path, [row("ring", 2, 8), row("zero-ring", 2, 4), row("ring", 4, 8)])
    m.write(path, [row("hsdp", 2, 8), row("hsdp", 4, 4)])
    m.write(path, [row("hsdp", 4, 5)])
    got = [(r["strategy"], r["ranks"], r["optimizer_state_bytes"]) for r in csv.DictReader(path.open())]
    assert got == [("ring", "2", "8"), ("zero-ring", "2", "4"), ("hsdp", "2", "8"), ("ring", "4", "8"),
                   ("hsdp", "4", "5")]
