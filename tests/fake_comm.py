"""A communicator stand-in for constructing strategies in unit tests (nothing is sent)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FakeComm:
    """What a strategy's constructor reads of its communicator (nothing is sent)."""

    rank: int
    size: int
    worker_ids: tuple

    @property
    def worker_id(self) -> int:
        return self.worker_ids[self.rank]
