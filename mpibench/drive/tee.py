"""Standard output kept in a file as well: the self-test's summary, printed and saved."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path


@contextlib.contextmanager
def summary_stream(path: Path):
    """Standard output that is also kept in ``path`` (the self-test folder's summary)."""
    class Both:
        def __init__(self, fh):
            self.fh = fh

        def write(self, text: str) -> None:
            sys.stdout.write(text)
            self.fh.write(text)

        def flush(self) -> None:
            sys.stdout.flush()
            self.fh.flush()

    with open(path, "w", encoding="utf-8") as fh:
        yield Both(fh)
