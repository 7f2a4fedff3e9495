"""The one interface every synchronisation strategy implements.

A strategy receives the step's local gradient sum and sample count, combines
them over the current membership and applies the averaged update to the
parameters in place, identically on every member. It reports which workers
contributed and the ``(offset, length)`` pieces that made up every reduced or
served buffer, for the ``membership`` and ``coverage`` invariants. The worker
loop sees nothing else of it.

Writing one (a plugin, or a built-in): ``docs/strategy-api.md`` lists every call
a strategy may use. A strategy implements ``reduce(buf)``, or overrides
``synchronize`` when the mean is formed another way; either must return a
:class:`Reduction`, and anything else ends the run as bad input (exit 2) with one
line naming the strategy (:class:`StrategyError`, raised by :func:`checked`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from mpibench.base.config import UsageError


@dataclass
class Reduction:
    """What one reduction did: who is in the sum, and the pieces it was built from.

    ``contributing``: the worker ids (``comm.worker_ids``, stable across a shrink; not ranks)
    whose buffers are in the sum. ``pieces``: the ``(global offset, length)`` int pairs the
    result was assembled from, which must cover ``total_length`` (the buffer's length) exactly.
    ``algorithm``: optional, the algorithm a choosing strategy used for this buffer."""

    contributing: tuple[int, ...]  # worker ids
    pieces: list[tuple[int, int]] = field(default_factory=list)  # (global offset, length)
    total_length: int = 0
    algorithm: str = ""  # which algorithm reduced it, where a strategy chooses (auto, hier)


class StrategyError(UsageError):
    """A strategy broke the interface (a wrong return value): bad input, one line naming it."""


def label(strategy) -> str:
    """How a message names ``strategy``: its ``name`` and where its class lives."""
    cls = type(strategy)
    where = f"{cls.__module__}:{cls.__qualname__}"
    name = getattr(strategy, "name", "") or ""
    return f"strategy {name!r} ({where})" if name else f"strategy {where}"


def checked(strategy, value, call: str) -> "Reduction":
    """``value`` if it is a proper :class:`Reduction` from ``strategy.CALL``; else StrategyError.

    Proper: ``contributing`` holds worker ids (ints), ``pieces`` holds ``(offset, length)``
    pairs of ints and ``total_length`` is an int."""
    why = None
    if not isinstance(value, Reduction):
        why = f"returned {_shown(value)}, not a Reduction"
    else:
        try:
            ids_ok = all(isinstance(w, (int, np.integer)) for w in value.contributing)
            pieces_ok = all(len(p) == 2 and all(isinstance(v, (int, np.integer)) for v in p) for p in value.pieces)
        except TypeError:
            ids_ok = pieces_ok = False
        if not ids_ok:
            why = f"returned a Reduction whose contributing is {_shown(value.contributing)}, not worker ids"
        elif not pieces_ok:
            why = f"returned a Reduction whose pieces are {_shown(value.pieces)}, not (offset, length) pairs"
        elif not isinstance(value.total_length, (int, np.integer)):
            why = f"returned a Reduction whose total_length is {_shown(value.total_length)}, not an int"
    if why is None:
        return value
    raise StrategyError(f"{label(strategy)}: {call} {why} "
                        "(Reduction(contributing=worker ids, pieces=[(offset, length)], total_length); "
                        "see docs/strategy-api.md)")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class SyncStrategy(ABC):
    """Reduce ``[grad_sum..., count]`` over the membership; apply the mean update."""

    name: str = ""
    # How the strategy cuts the optimizer step among the members, as the checker knows the cuts
    # (check/sharded.py: "shard-per-member", "halving-core", "replica-halves"); None: every
    # member steps every parameter. Recorded in each case.json, so the ownership, gathered and
    # optimizer-state invariants judge any strategy that declares one, plugins included.
    sharding_kind: str | None = None
    # Whether the update steps the parameters (and so the optimizer state) where they live.
    # False: the step is applied to a copy that is then sent back (a parameter server pulls its
    # slice, steps it, pushes it), so momentum or Adam state has no place to be kept (any
    # optimizer state, --momentum or --optimizer adam/adamw, is refused for it).
    steps_in_place: bool = True
    # Where the product uses a strategy without being told to (the registry derives its lists
    # from these): in the main job's default set (and the launches predict replays); the
    # baseline every ratio divides by; laid out by node (predict's scale table shows it);
    # reading and writing the record of timed choices (sync/auto_choices), which a simulated
    # replay must learn before it runs.
    in_main_job: bool = False
    baseline: bool = False
    topology_aware: bool = False
    records_choices: bool = False
    # The label of the strategy's row in bench.csv ("in-step sync: NAME" when empty).
    bench_label: str = ""
    # Whether the strategy has a nonblocking form of its reduction (start_bucket and
    # finish_buckets below): run --overlap starts each layer's bucket while the backward pass
    # goes on (mpibench.sync.overlap), and is refused, in one line, for a strategy without one.
    overlaps: bool = False

    def __init__(self, comm, backend, n_params: int, options: dict | None = None):
        self.comm = comm
        self.backend = backend
        self.n_params = n_params
        self.options = options or {}
        # The step buffer: gradient sums with the sample count carried in the last slot,
        # so one reduction moves both and the division happens once, afterwards.
        self.buffer = backend.zeros(n_params + 1, dtype=np.float32)

    @abstractmethod
    def reduce(self, buf) -> Reduction:
        """Sum ``buf`` element-wise over the membership, in place; say who is in the sum."""

    def synchronize(self, params, grad_sum, count: int, lr: float) -> Reduction:
        """One step's sync: pack, reduce, divide by the total count, apply.

        May be overridden (a strategy that forms the mean another way); it must then
        update ``params`` in place identically on every member and return the
        Reduction it made."""
        self.backend.pack(self.buffer, grad_sum, count)
        reduction = checked(self, self.reduce(self.buffer), "reduce()")
        total = self.buffer[-1]
        self.backend.apply_update(params, self.buffer[:-1], total, lr)
        return reduction

    def start_bucket(self, offset: int, length: int):
        """Start summing ``buffer[offset:offset + length]`` over the membership without waiting
        (every member starts the same buckets in the same order); a handle for
        :meth:`finish_buckets`. A strategy with ``overlaps = True`` implements both."""
        raise NotImplementedError(f"{label(self)} has no nonblocking reduction (overlaps = False)")

    def finish_buckets(self, handles: list) -> list[Reduction]:
        """Wait for the started buckets; each slice then holds its sum. One Reduction per
        bucket, its pieces at global offsets in the step buffer."""
        raise NotImplementedError(f"{label(self)} has no nonblocking reduction (overlaps = False)")

    def total_count(self) -> int | float:
        """The global sample count of the last synchronisation.

        An int while the count slot holds a whole finite number; otherwise the float it
        holds (NaN, inf, a fraction), so a poisoned buffer is recorded and judged by the
        checker instead of crashing every rank here."""
        value = float(self.backend.to_host(self.buffer[-1:])[0])
        return int(value) if np.isfinite(value) and value == int(value) else value

    def pool_loss(self, local_row: np.ndarray, contributing) -> np.ndarray:
        """Rows ``(count, sum, sumsq)`` of the contributing workers' losses.

        Gathered over the membership; rows of workers outside ``contributing``
        are dropped, so an excluded worker's losses never enter the statistics.
        """
        rows = np.empty((self.comm.size, 3), dtype=np.float64)
        self.comm.allgather(local_row, rows)
        keep = [i for i, w in enumerate(self.comm.worker_ids) if w in set(contributing)]
        return rows[keep]

    # The cost model's reading of a strategy (mpibench.results.costmodel): a class may carry
    # cost_s(cal, p, nbytes, options), its alpha-beta-gamma time, with ``cost_assumption`` the
    # one line printed beside each modelled figure on how cost_s sees the algorithm.
    cost_assumption: str = ""

    # The simulator's and predict's reading of a strategy: its messages as rounds, or the
    # strategies that stand for it, and why its largest messages crowd a NIC where they do.
    nic_note: str = ""

    @staticmethod
    def message_rounds(p: int, nbytes: float, nodes: list | None) -> list | None:
        """This strategy's messages for ``nbytes`` on ``p`` ranks as rounds (sync/patterns.py),
        ``nodes`` the ranks of each node (given to a ``topology_aware`` strategy, else None);
        None when it has none of its own (see ``modelled_as``),
        and then without ``modelled_as`` the simulator and predict cannot price it."""
        return None

    @staticmethod
    def modelled_as(nbytes: float) -> tuple[str, ...]:
        """The strategies whose patterns stand for this one's at ``nbytes`` (the model takes the
        fastest of them): for a strategy that picks its algorithm as it runs."""
        return ()

    @staticmethod
    def message_bytes(p: int, nbytes: float, options: dict | None = None) -> float:
        """The size of the messages this strategy sends for ``nbytes`` on ``p`` ranks, which
        picks the calibration's alpha-beta band: a 1/p share unless a strategy says otherwise."""
        return nbytes / p

    def close(self) -> None:
        """Release anything tied to the communicator."""
