"""The recovery mistakes among the self-test's mutants (see :mod:`.mutants`).

They show only under fault injection: two strategy mixins carry state from an
aborted attempt into its redo, and :func:`stale_rejoin_recovery` overrides two
recovery hooks so that healed and respawned workers keep stale parameters.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from mpibench.sync.comm import CommError

_LEAK: dict[str, np.ndarray] = {}


class DeadLeakMixin:
    """Keeps what an aborted reduction had already summed and adds it to the redo.

    The survivor's own share of the aborted buffer is taken out again, so what
    leaks is exactly what the reduction had received from others, the dead
    rank's partial contribution among it.
    """

    def synchronize(self, params, grad_sum, count, lr):
        self.backend.pack(self.buffer, grad_sum, count)
        own = self.buffer.copy()
        leak = _LEAK.pop("received", None)
        if leak is not None:
            np.add(self.buffer, leak, out=self.buffer)
        try:
            reduction = self.reduce(self.buffer)
        except CommError:
            _LEAK["received"] = self.buffer - own
            raise
        self.backend.apply_update(params, self.buffer[:-1], self.buffer[-1], lr)
        return reduction


_APPLIED: dict[str, np.ndarray] = {}


class DoubleApplyMixin:
    """A redone step is applied on top of the aborted attempt's update.

    The worker loop rolls the parameters back before a redo; this strategy
    notices the redo (the parameters are back where its last attempt started)
    and re-applies that attempt's update before the redo's own.
    """

    def synchronize(self, params, grad_sum, count, lr):
        before = _APPLIED.get("before")
        if before is not None and np.array_equal(before, params):
            np.add(params, _APPLIED["delta"], out=params)
        start = params.copy()
        reduction = super().synchronize(params, grad_sum, count, lr)
        _APPLIED["before"], _APPLIED["delta"] = start, params - start
        return reduction


def stale_rejoin_recovery() -> type:
    """A fault recovery whose healed and respawned workers keep stale parameters.

    Two of its hooks are overridden: the re-sync of healed workers is undone on
    the worker that re-synced, and a replacement is handed the initial
    parameters instead of the survivors' current ones.
    """
    from mpibench.engine.model import Shapes, init_params
    from mpibench.faults.recovery import FaultRecovery

    class StaleRejoinRecovery(FaultRecovery):
        def _resync(self, trainer, step):
            kept = trainer.params.copy()
            super()._resync(trainer, step)
            trainer.params[...] = kept

        def hand_over(self, resume):
            c = resume.config
            return replace(resume, params=init_params(c.seed, Shapes(c.features, c.hidden, c.classes)))

    return StaleRejoinRecovery
