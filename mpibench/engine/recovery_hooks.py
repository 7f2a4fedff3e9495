"""The hooks the worker loop calls around a step and when its communication fails.

The loop (:mod:`mpibench.engine.worker`) knows only this interface; the
fault-aware policy (:mod:`mpibench.faults.recovery`) implements it. The
default gives up on the first failure.
"""
from __future__ import annotations

from mpibench.sync.comm import CommError


class Recovery:
    """What the loop does around a step and when its communication fails. Default: give up.

    The fault-aware policy (``mpibench.faults.recovery``) overrides these hooks:
    ``begin`` may change the step group (partitions, dropped stragglers),
    ``role`` says whether this worker contributes, is late (its batch is used
    up but left out) or stalls (nothing consumed, nothing applied),
    ``share`` hands the step group's result to members outside it,
    ``commit`` turns the attempt into one decision shared by every member
    (``"commit"``, ``"skip"`` when nobody may commit, ``"retry"``), and
    ``handle`` recovers before a retry. ``trainer`` is always the calling
    :class:`mpibench.engine.worker.Trainer` (not imported here: the loop
    imports this interface, not the other way round).
    """

    def begin(self, trainer, step: int) -> None:
        pass

    def role(self, trainer) -> str:
        return "contribute"

    def share(self, trainer, role: str, reduction, loss_rows, effective_batch):
        """The step's (reduction, loss rows, effective batch) on this worker, whatever its role.

        A late worker also takes the committed parameters; a stalled one keeps its own.
        """
        return reduction, loss_rows, effective_batch

    def commit(self, trainer, step: int, error: CommError | None) -> str:
        if error is not None:
            raise error
        return "commit"

    def excluded(self, trainer, step: int) -> dict[int, str]:
        return {}

    def handle(self, trainer, step: int, error: CommError | None) -> None:
        raise error if error is not None else RuntimeError(f"step {step} failed")
