"""Optimizer state: SGD with momentum, held as slices of the parameter vector.

``--momentum MU`` (0, the default, is plain SGD with no state) makes every
update ``v <- MU v + g;  theta <- theta - lr v`` with ``g`` the gradient sums
divided once by the total count. The state ``v`` is held by global offset, one
slice per range a rank steps: a replicated strategy steps the whole vector
and so holds all of it (identical on every rank, like the parameters); a
sharded strategy (one that declares a ``sharding_kind``) steps one shard and holds
only that shard's state, which is the memory ZeRO saves and the state a
death can lose.

The optimizer sits where every strategy already applies its update: the
back-end's ``apply_update`` (see :class:`~.phase_backend.PhaseBackend`), so no
strategy knows about it. Which range a call steps is read from where its
view of the parameters starts; a strategy that steps a copy (``steps_in_place``
False: a parameter server) cannot carry state and is refused with momentum (:func:`refusal`). A step whose
total count is zero changes neither the parameters nor the state.

Recovery cannot rebuild a lost slice of state from anything: the gradients
that built it are gone. :func:`refusal` names, before a run starts, every
combination whose faults would need state that no survivor holds, and the
run is refused (exit 2) instead of training on silently reset state.
"""
from __future__ import annotations

import numpy as np

from mpibench.base.config import UsageError
from mpibench.sync.registry import lookup


class MomentumState:
    """The velocity, by global offset, of the ranges this rank steps."""

    def __init__(self, momentum: float, params: np.ndarray):
        self.momentum = np.float32(momentum)
        self.params = params  # the vector whose views the strategies step
        self.slices: dict[int, np.ndarray] = {}  # global offset -> velocity of that range
        self._saved: dict[int, np.ndarray] = {}

    def offset_of(self, view: np.ndarray) -> int:
        start = view.__array_interface__["data"][0] - self.params.__array_interface__["data"][0]
        offset = start // self.params.itemsize
        if len(view) and not (0 <= offset and offset + len(view) <= len(self.params)):
            raise RuntimeError("momentum: the strategy stepped a copy of the parameters, not the parameters")
        return int(offset)

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

    def _fresh(self, offset: int, length: int) -> np.ndarray:
        """Zero state for a range first stepped now; a range that overlaps state held for
        another range means the shards moved, and that state cannot be rebuilt here."""
        for o, v in self.slices.items():
            if o < offset + length and offset < o + len(v):
                raise RuntimeError(f"momentum: elements [{offset}, {offset + length}) were re-sharded; "
                                   "their state is not held here (a refused combination ran)")
        return np.zeros(length, dtype=np.float32)

    def save(self) -> None:
        """The rollback point (taken with the parameters before each attempt)."""
        self._saved = {o: v.copy() for o, v in self.slices.items()}

    def restore(self) -> None:
        self.slices = {o: v.copy() for o, v in self._saved.items()}

    def held(self) -> list[tuple[int, np.ndarray]]:
        """``(global offset, velocity)`` of every range held, by offset."""
        return sorted(self.slices.items())

    def nbytes(self) -> int:
        return sum(v.nbytes for v in self.slices.values())


# How a sharding kind (SyncStrategy.sharding_kind) holds the optimizer state: one owner per
# shard, or every shard's state held by one owner in each of two replica groups.
ONE_OWNER_KINDS = ("shard-per-member", "halving-core")
REPLICATED_KINDS = ("replica-halves",)


def refusal(strategy: str, momentum: float, recovery: str, schedule, straggler_deadline: float = 0.0,
            device: str = "cpu") -> str | None:
    """Why ``strategy`` with optimizer state cannot run ``schedule`` honestly, or None. What the
    strategy declares decides (its sharding kind, whether it steps in place), not its name, so a
    plugin is refused as a built-in of the same kind is."""
    if not momentum:
        return None
    if device != "cpu":
        return f"--momentum keeps its state in host memory: use --device cpu, not {device}"
    entry = lookup(strategy)
    if not entry.steps_in_place:
        return f"--momentum needs a strategy that steps the parameters in place; {strategy} steps a copy"
    name = getattr(schedule, "name", "the schedule")
    kills, parts = list(schedule.kills), list(schedule.partitions)
    late = bool(schedule.delays) and straggler_deadline > 0
    if entry.sharding_kind in REPLICATED_KINDS:
        return _replicated_refusal(strategy, name, schedule, kills, bool(parts) or late, recovery)
    if entry.sharding_kind in ONE_OWNER_KINDS and (kills or parts or late):
        return (f"{strategy} with --momentum cannot survive {name}: a shard's optimizer state is held "
                "by its owner alone, and a death, a cut or a dropped straggler re-shards it without "
                "the state of the lost owner (no replica); run it with --momentum 0")
    if kills and recovery == "respawn":
        return (f"--momentum with --recovery respawn cannot run {name}: the replacement would start "
                "without the optimizer state (it is not handed over); use --recovery shrink")
    if late or any(p.to_step is not None for p in parts):
        return (f"--momentum cannot run {name}: a worker that rejoins (a healed side, a dropped "
                "straggler) takes the parameters but not the optimizer state")
    return None


def _replicated_refusal(strategy: str, name: str, schedule, kills: list, rejoins: bool,
                        recovery: str) -> str | None:
    """HSDP hands a dead owner's state over from its replica: refused only where one step's deaths
    (before the handover after them commits) take every holder of a shard, or a worker rejoins.
    A death after applying may surface at the next step, so it is counted with that step's too."""
    from mpibench.sync.hsdp import lost_shards

    if rejoins:
        return (f"{strategy} with --momentum cannot run {name}: a worker that rejoins (a cut, a dropped "
                "straggler) holds stale optimizer state, and the handover cannot tell it from the replica's")
    members = list(range(max([schedule.world_size] + [k.rank + 1 for k in kills])))
    for step in sorted({k.step for k in kills}):
        dead = {k.rank for k in kills if k.step == step or (k.step == step - 1 and k.phase == "after_apply")}
        lost = lost_shards(members, dead)
        if lost:
            return (f"{strategy} with --momentum cannot survive {name}: the deaths at step {step} "
                    f"(workers {sorted(dead)}) take both replicas of shard {lost[0]}'s optimizer state")
        if recovery != "respawn":
            members = [m for m in members if m not in dead]
    return None


def check_supported(config, schedule) -> None:
    """UsageError (exit 2, one line) for a combination :func:`refusal` names."""
    reason = refusal(config.strategy, config.momentum, config.recovery, schedule, config.straggler_deadline,
                     config.device)
    if reason:
        raise UsageError(reason)
