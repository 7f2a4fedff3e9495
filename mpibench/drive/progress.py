"""A one-line progress bar for drivers that run many jobs.

On a terminal the line is redrawn in place with ``\\r``; into a file or a
pipe it prints a plain line about every tenth of the way, so logs stay short.
Without a total (a run with a time budget) it counts up and shows the budget left.
"""
from __future__ import annotations

import time


class Progress:
    def __init__(self, total: int | None, stream, width: int = 30, label: str = "cases",
                 budget_s: float | None = None):
        self.total, self.stream, self.width, self.label = total, stream, width, label
        self.budget_s = budget_s
        self.done = self.findings = 0
        self.start_s = time.perf_counter()
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._every = max(1, (total or 100) // 10)
        self._draw()

    def advance(self, finding: bool = False) -> None:
        self.done += 1
        self.findings += int(finding)
        if self.tty or self.done % self._every == 0 or self.done == self.total:
            self._draw()

    def line(self) -> str:
        elapsed_s = time.perf_counter() - self.start_s
        rate = self.done / elapsed_s * 60 if elapsed_s > 0 and self.done else 0.0
        if self.total is None:
            left_s = max(0.0, (self.budget_s or 0.0) - elapsed_s)
            return (f"{self.done} {self.label}, {self.findings} findings, {rate:.1f}/min, "
                    f"~{left_s / 60:.1f} min of the budget left")
        filled = self.width * self.done // max(1, self.total)
        left_s = (self.total - self.done) / (rate / 60) if rate else 0.0
        return (f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {self.label}, "
                f"{self.findings} findings, {rate:.1f}/min, ~{left_s / 60:.1f} min left")

    def _draw(self) -> None:
        if self.tty:
            self.stream.write("\r" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
