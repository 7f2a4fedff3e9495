"""The self-test's optimizer defects: Adam (AdamW) states with one mistake each, planted as the
trainer's optimizer (the production :class:`~mpibench.engine.adam.AdamState` subclassed).

* ``adam-no-bias-correction``: ``theta -= lr m / (sqrt(v) + eps)``, m and v uncorrected; the
  state it keeps is right, the update is not;
* ``adam-beta1-for-beta2``: the second moment decays, and is corrected, with ``beta1`` (the
  first update is still right: ``v_hat = g^2`` whatever the decay; the state is not);
* ``adam-steps-twice``: the step count advances twice per step;
* ``adamw-drops-decay``: AdamW without its decoupled weight decay (the config still says it).

Each records the state it holds, as an honest optimizer would; the checker must find the
mistake from its own model (``check/adam.py``), reading the settings from the case alone.
"""
from __future__ import annotations

from mpibench.engine.adam import AdamState


class NoBiasCorrection(AdamState):
    def corrections(self, t: int) -> tuple[float, float]:
        return 1.0, 1.0


class StepsTwice(AdamState):
    def step(self, backend, params_view, sums, count, lr: float) -> None:
        before = dict(self.counts)
        super().step(backend, params_view, sums, count, lr)
        for offset, t in self.counts.items():
            if t != before.get(offset, 0):
                self.counts[offset] = t + 1


def _adam(config, params, cls=AdamState, **changed) -> AdamState:
    """The run's Adam as ``config`` sets it, with ``changed`` settings, as class ``cls``."""
    settings = {"beta1": config.beta1, "beta2": config.beta2, "eps": config.adam_eps,
                "weight_decay": config.weight_decay, "decoupled": config.optimizer == "adamw"}
    return cls(params, **{**settings, **changed})


OPTIMIZER_MUTANTS = {
    "adam-no-bias-correction": lambda config, params: _adam(config, params, cls=NoBiasCorrection),
    "adam-beta1-for-beta2": lambda config, params: _adam(config, params, beta2=config.beta1),
    "adam-steps-twice": lambda config, params: _adam(config, params, cls=StepsTwice),
    "adamw-drops-decay": lambda config, params: _adam(config, params, weight_decay=0.0),
}


def plant(trainer, mutant: str) -> None:
    """Give ``trainer`` the defective optimizer ``mutant`` names, and a strategy built over it."""
    trainer.optimizer = OPTIMIZER_MUTANTS[mutant](trainer.config, trainer.params)
    trainer.set_data_comm(trainer.data_comm)
