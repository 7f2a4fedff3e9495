"""The quorum rule: may the survivors of a shrink go on committing?

ULFM reports a process as failed when the runtime believes it is gone.
Without Open MPI's heartbeat detector that happens only to processes that
really exited, so every shrink leaves the only survivors there are and they go
on. With the detector on (MCA parameter ``mpi_ft_detector``), a network cut
longer than its timeout makes *each* side declare the other dead: both shrink,
and both would go on committing (split brain). When failures may be such false
suspicions, the survivors of a shrink go on only if they hold a strict
majority of the membership before it, or exactly half of it including its
lowest worker id; any other side stalls (commits nothing, keeps its
parameters) until the step watchdog ends it with a diagnostic. Two disjoint
survivor sets of one membership can never both pass this rule.

The detector is read from the environment Open MPI gives every process
(``mpirun --mca mpi_ft_detector true`` exports ``OMPI_MCA_mpi_ft_detector``),
so the rule follows the runtime's real setting and cannot be forgotten on the
command line. A value set only in an MCA parameter file is not seen.
"""
from __future__ import annotations

import os
import threading

from mpibench.engine.watchdog import StepWatchdog, budget_for

DETECTOR_VARIABLE = "OMPI_MCA_mpi_ft_detector"
TRUE_VALUES = ("1", "true", "yes", "on", "enabled")


def suspicions_possible(environ=None) -> bool:
    """Whether ULFM may report live processes as failed (the heartbeat detector is on)."""
    value = (os.environ if environ is None else environ).get(DETECTOR_VARIABLE, "")
    return value.strip().lower() in TRUE_VALUES


def may_go_on(previous, survivors, suspicions: bool) -> bool:
    """Whether ``survivors`` (of a shrink of ``previous``) may keep committing."""
    if not suspicions:
        return True
    before, kept = set(previous), set(survivors) & set(previous)
    if 2 * len(kept) != len(before):
        return 2 * len(kept) > len(before)
    return bool(before) and min(before) in kept


def stall(step: int, members, deadline_s: float) -> None:
    """Commit nothing again: a watchdog ends the process (the step's own, armed earlier,
    or this one, for a stall outside the step loop)."""
    StepWatchdog(budget_for(deadline_s)).arm(step, members)
    threading.Event().wait()
