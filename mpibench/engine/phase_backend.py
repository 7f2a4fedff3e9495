"""The strategy's back-end as the worker loop hands it over: it tells the communicator when the
update is about to be applied, and steps the optimizer's state with the parameters."""
from __future__ import annotations


class PhaseBackend:
    """The strategy's back-end, telling the communicator when the update is about to be applied.

    Every strategy applies the reduced update through ``apply_update``, so its
    first call in a step is the moment "after the reduction, before apply".
    """

    def __init__(self, backend, on_apply, optimizer=None):
        self._backend, self._on_apply, self._optimizer = backend, on_apply, optimizer

    def __getattr__(self, name):
        return getattr(self._backend, name)

    @property
    def optimizer(self):
        """The optimizer's state (None without one): a strategy that re-shards it hands it over."""
        return self._optimizer

    def apply_update(self, *args, **kwargs):
        self._on_apply()
        if self._optimizer is not None:  # the optimizer's state steps with the parameters
            return self._optimizer.step(self._backend, *args, **kwargs)
        return self._backend.apply_update(*args, **kwargs)
