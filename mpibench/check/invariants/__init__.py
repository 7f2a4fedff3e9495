"""The invariants (the six of DESIGN and the history contract), each judged per step from the history (one module each).

An invariant module has ``NAME`` and ``check(case, view) -> (passed, detail)``
where ``case`` is the :class:`~mpibench.check.case.CaseModel` and ``view`` the
step's :class:`~mpibench.check.case.StepView`. Some keep state across steps
(the data walk, in ``case.state``): they are called once per step, in order. A module with
``applies(case)`` is judged only in the cases where it returns true.
A check that raises is unknown, never a pass.
"""
from __future__ import annotations

from . import accounting, contract, coverage, data, equivalence, gathered, membership, optimizer_state, ownership, replicas

# ownership, gathered and optimizer_state judge only the cases they apply to (``applies(case)``:
# a sharded strategy, a run with optimizer state); every other case's rows are as before.
INVARIANTS = (equivalence, replicas, accounting, membership, data, coverage, contract,
              ownership, gathered, optimizer_state)
NAMES = tuple(m.NAME for m in INVARIANTS)
NO_COMMIT = (membership, contract)  # what can be judged of a step that nobody committed
