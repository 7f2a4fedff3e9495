"""Optimizer state, held as slices of the parameter vector: SGD momentum here, Adam in :mod:`.adam`.

``--momentum MU`` (0, the default, is plain SGD with no state) makes every
update ``v <- MU v + g;  theta <- theta - lr v`` with ``g`` the gradient sums
divided once by the total count; ``--optimizer adam|adamw`` keeps ``m``, ``v``
and a step count instead (:class:`~.adam.AdamState`). The state is held by
global offset, one slice per range a rank steps: a replicated strategy steps
the whole vector and so holds all of it (identical on every rank, like the
parameters); a sharded strategy (one that declares a ``sharding_kind``) steps
one shard and holds only that shard's state, which is the memory ZeRO saves
and the state a death can lose.

The optimizer sits where every strategy already applies its update: the
back-end's ``apply_update`` (see :class:`~.phase_backend.PhaseBackend`), so no
strategy knows about it. Which range a call steps is read from where its
view of the parameters starts; a strategy that steps a copy (``steps_in_place``
False: a parameter server) cannot carry state and is refused with any stateful
optimizer (:func:`refusal`). A step whose total count is zero changes neither
the parameters nor the state.

Recovery cannot rebuild a lost slice of state from anything: the gradients
that built it are gone. :func:`refusal` names, before a run starts, every
combination whose faults would need state that no survivor holds, and the
run is refused (exit 2) instead of training on silently reset state.
"""
from __future__ import annotations

import numpy as np

from mpibench.base.config import UsageError, has_optimizer_state
from mpibench.sync.registry import lookup

from .adam import AdamState
from .state_slices import SlicedState


class MomentumState(SlicedState):
    """The velocity, by global offset, of the ranges this rank steps."""

    name = "momentum"

    def __init__(self, momentum: float, params: np.ndarray):
        super().__init__(params)
        self.momentum = np.float32(momentum)

    def step(self, backend, params_view, sums, count, lr: float) -> None:
        """``v <- mu v + sums / count; params_view -= lr v`` for the range of ``params_view``."""
        total = float(count)  # host memory only (refusal() names --device)
        if not total or not len(params_view):
            return
        offset = self.offset_of(params_view)
        grad = np.asarray(backend.to_host(sums), dtype=np.float32) / np.float32(total)
        v = self.slices.get(offset)
        if v is None or len(v) != len(params_view):
            v = self.slices[offset] = self._fresh(offset, len(params_view))
        np.multiply(v, self.momentum, out=v)
        np.add(v, grad, out=v)
        np.subtract(params_view, np.float32(lr) * v, out=params_view)


def make_optimizer(config, params: np.ndarray):
    """The run's optimizer state over ``params`` (None: plain SGD, nothing kept)."""
    if config.optimizer in ("adam", "adamw"):
        return AdamState(params, config.beta1, config.beta2, config.adam_eps, config.weight_decay,
                         decoupled=config.optimizer == "adamw")
    return MomentumState(config.momentum, params) if config.momentum else None


# How a sharding kind (SyncStrategy.sharding_kind) holds the optimizer state: one owner per
# shard, or every shard's state held by one owner in each of two replica groups.
ONE_OWNER_KINDS = ("shard-per-member", "halving-core")
REPLICATED_KINDS = ("replica-halves",)


def refusal(strategy: str, state, recovery: str, schedule, straggler_deadline: float = 0.0,
            device: str = "cpu") -> str | None:
    """Why ``strategy`` with optimizer state cannot run ``schedule`` honestly, or None. ``state``:
    whether the optimizer keeps state (a momentum above 0, ``adam``, ``adamw``: any true value;
    :func:`check_supported` passes :func:`~mpibench.base.config.has_optimizer_state`). What the
    strategy declares decides (its sharding kind, whether it steps in place), not its name, so a
    plugin is refused as a built-in of the same kind is."""
    if not state:
        return None
    if device != "cpu":
        return (f"optimizer state (--momentum, --optimizer adam/adamw) is kept in host memory: "
                f"use --device cpu, not {device}")
    entry = lookup(strategy)
    if not entry.steps_in_place:
        return f"optimizer state needs a strategy that steps the parameters in place; {strategy} steps a copy"
    name = getattr(schedule, "name", "the schedule")
    kills, parts = list(schedule.kills), list(schedule.partitions)
    late = bool(schedule.delays) and straggler_deadline > 0
    if entry.sharding_kind in REPLICATED_KINDS:
        return _replicated_refusal(strategy, name, schedule, kills, bool(parts) or late, recovery)
    if entry.sharding_kind in ONE_OWNER_KINDS and (kills or parts or late):
        return (f"{strategy} with optimizer state cannot survive {name}: a shard's optimizer state is held "
                "by its owner alone, and a death, a cut or a dropped straggler re-shards it without "
                "the state of the lost owner (no replica); run it without state (--optimizer sgd --momentum 0)")
    if kills and recovery == "respawn":
        return (f"optimizer state with --recovery respawn cannot run {name}: the replacement would start "
                "without the optimizer state (it is not handed over); use --recovery shrink")
    if late or any(p.to_step is not None for p in parts):
        return (f"optimizer state cannot run {name}: a worker that rejoins (a healed side, a dropped "
                "straggler) takes the parameters but not the optimizer state")
    return None


def _replicated_refusal(strategy: str, name: str, schedule, kills: list, rejoins: bool,
                        recovery: str) -> str | None:
    """HSDP hands a dead owner's state over from its replica (momentum's velocity, Adam's m, v
    and step count alike): refused only where one step's deaths (before the handover after them
    commits) take every holder of a shard, or a worker rejoins. A death after applying may
    surface at the next step, so it is counted with that step's too."""
    lost_shards = getattr(lookup(strategy).cls, "lost_shards", None)  # the replicated layout's rule
    if lost_shards is None:
        return (f"{strategy} with optimizer state: it declares replicas but no lost_shards(members, dead), "
                "so which optimizer state survives a death cannot be told")
    if rejoins:
        return (f"{strategy} with optimizer state cannot run {name}: a worker that rejoins (a cut, a dropped "
                "straggler) holds stale optimizer state, and the handover cannot tell it from the replica's")
    members = list(range(max([schedule.world_size] + [k.rank + 1 for k in kills])))
    for step in sorted({k.step for k in kills}):
        dead = {k.rank for k in kills if k.step == step or (k.step == step - 1 and k.phase == "after_apply")}
        lost = lost_shards(members, dead)
        if lost:
            return (f"{strategy} with optimizer state cannot survive {name}: the deaths at step {step} "
                    f"(workers {sorted(dead)}) take both replicas of shard {lost[0]}'s optimizer state")
        if recovery != "respawn":
            members = [m for m in members if m not in dead]
    return None


def check_supported(config, schedule) -> None:
    """UsageError (exit 2, one line) for a combination :func:`refusal` names."""
    reason = refusal(config.strategy, has_optimizer_state(config), config.recovery, schedule,
                     config.straggler_deadline, config.device)
    if reason:
        raise UsageError(reason)
