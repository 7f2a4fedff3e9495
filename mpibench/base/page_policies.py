"""The page policies ``bench --pages`` takes, named below every layer that offers them (the
command line, the benchmark, the scripts) so that none imports the benchmark, and with it MPI,
to list them. What each does: :mod:`mpibench.job.bench.pages`."""
from __future__ import annotations

POLICIES = ("4k", "system")
DEFAULT_POLICY = "4k"
