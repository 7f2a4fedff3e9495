"""How a run went, as every rank agrees on it at the end, and the line a violation prints."""
from __future__ import annotations

from dataclasses import dataclass

from mpibench.base.config import RunConfig, replay_command


@dataclass
class Summary:
    """How a run went, agreed on by every rank at the end."""

    steps: int = 0
    checks: int = 0
    violations: int = 0
    unknown: int = 0
    first_violation: tuple[int, str, str] | None = None  # (step, invariant, detail)
    batch_min: int | None = None
    batch_max: int | None = None
    error: str | None = None  # a run that could not go on
    check_s: float = 0.0  # the online check of the case's history, on the first live member
    case_verdict: object = None  # that check's mpibench.check.CaseVerdict (reused for verdict.json)

    def note_batch(self, effective_batch: int) -> None:
        self.batch_min = effective_batch if self.batch_min is None else min(self.batch_min, effective_batch)
        self.batch_max = effective_batch if self.batch_max is None else max(self.batch_max, effective_batch)


def violation_message(summary: Summary, config: RunConfig, ranks: int) -> str:
    step, invariant, detail = summary.first_violation
    return (f"violation: invariant '{invariant}' failed at step {step} ({detail}); "
            f"replay: {replay_command(config, ranks)}")
