"""What one batch of timed calls gives on one rank (every candidate's ``time_calls``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Timed:
    """One batch of timed calls on this rank."""

    times_s: np.ndarray
    wrong: int
