"""Step records kept in memory: how the results layer times the real worker loop.

The scaling measurement and the loop-overhead calibration run the ordinary
trainer (``mpibench.job.runner.run_scenario``) and read its step rows from here
instead of from a CSV.
"""
from __future__ import annotations


class RowList:
    """Stands in for a CSV log: keeps the step rows in memory."""

    def __init__(self):
        self.rows = []

    def write(self, row: dict) -> None:
        self.rows.append(row)

    def close(self) -> None:
        pass


class MemoryRecords:
    """Stands in for :class:`mpibench.base.records.RunRecords`: every row kept in memory."""

    def __init__(self):
        self.steps, self.invariants, self.faults = RowList(), RowList(), RowList()
        # Every rank's own gradient-sync time per committed step (step rows are the first
        # member's only): how long ranks wait for each other shows in their spread.
        self.own_sync_s: list[float] = []
        # and its step's parts (engine.steprecord.PART_NAMES), to tell the wait from the reduction
        self.own_parts: list[tuple] = []

    def close(self) -> None:
        pass
