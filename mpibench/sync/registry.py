"""The one place strategy names are resolved, listed and validated.

A strategy is found, in this order, as

1. a built-in name (:data:`BUILTIN`);
2. an installed plugin: an entry point in the group ``mpibench.strategies``
   whose name is the strategy's name and whose value is ``module:Class``;
3. ``package.module:Class`` given directly (to try a class without packaging it).

Whatever the source, the class must subclass :class:`~.base.SyncStrategy` and
implement ``reduce``; anything else is refused with one line naming the
problem. Every command (``run``, ``bench``, ``sweep``, the main job, the
self-test) validates through :func:`validate`, so they accept and refuse the
same names. A class may carry ``summary`` (one line), ``option_names`` (the
run options it reads, from :data:`OPTIONS`) and ``cost_s(cal, p, nbytes,
options)`` (its alpha-beta-gamma time; the cost model uses it).
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass

from mpibench.base.config import UsageError
from .auto import Auto
from .base import SyncStrategy
from .hier import Hierarchical
from .hsdp import Hsdp
from .native import NativeAllreduce
from .ps import ParameterServer
from .rabenseifner import Rabenseifner
from .rd import RecursiveDoubling
from .sharding import SHARDING_KINDS, ShardedStrategy
from .ring import RingAllreduce
from .zero_halving import ZeroHalving
from .zero_ring import ZeroRing

ENTRY_POINT_GROUP = "mpibench.strategies"

BUILTIN: dict[str, type[SyncStrategy]] = {cls.name: cls for cls in (
    NativeAllreduce, RingAllreduce, ParameterServer, RecursiveDoubling, Rabenseifner, Hierarchical, Auto,
    ZeroRing, ZeroHalving, Hsdp)}

# The hand-written strategies every fault scenario and the sweep run by default (native is the
# baseline the benchmarks divide by).
CHECKED: tuple[str, ...] = ("ring", "ps", "rd", "rabenseifner", "hier", "auto")

# The sharded strategies (reduce-scatter, each rank steps its own shard, all-gather): run by
# name (run, sweep --strategies, sim exhaustive), not in the main job's default set.
SHARDED: tuple[str, ...] = tuple(name for name, cls in BUILTIN.items() if cls.sharding_kind)

# The lists other modules use, derived from what each class declares (sync/base.py), so
# nothing outside this package names a built-in strategy.
MAIN_DEFAULT: tuple[str, ...] = tuple(name for name, cls in BUILTIN.items() if cls.in_main_job)
BASELINE: str = next(name for name, cls in BUILTIN.items() if cls.baseline)
# predict's scale table: the main job's strategies, the baseline and the node-aware ones
AT_SCALE: tuple[str, ...] = tuple(name for name, cls in BUILTIN.items()
                                  if cls.in_main_job or cls.baseline or cls.topology_aware)


def overlapping() -> tuple[str, ...]:
    """The built-ins with a nonblocking reduction, which run --overlap can start bucket by bucket."""
    return tuple(name for name, cls in BUILTIN.items() if cls.overlaps)


def drawn_names() -> list[str]:
    """The replicated built-ins in the registry's order, each followed by the bench rows that
    time it by another path: the order charts give their colours in."""
    return [row for name, cls in BUILTIN.items() if not cls.sharding_kind
            for row in (name, *getattr(cls, "bench_rows", ()))]


# The options a strategy may read from its ``options`` dict, and what each means.
OPTIONS: dict[str, str] = {
    "bucket_bytes": "bucket cap in bytes (--bucket-bytes)",
    "ps_shards": "parameter-server shards, 0 = one per member (--ps-shards)",
    "ranks_per_node": "hier: ranks per node instead of shared-memory detection",
    "calibration": "auto: alpha/beta/gamma to choose with by the cost model (else it times the candidates)",
}


def strategy_options(bucket_bytes: int, ps_shards: int, **more) -> dict:
    """The ``options`` dict every strategy is built with: the two run settings
    all built-ins read, plus any of :data:`OPTIONS` given by name."""
    unknown = sorted(set(more) - set(OPTIONS))
    if unknown:
        raise ValueError(f"not a strategy option: {', '.join(unknown)} (see registry.OPTIONS)")
    return {"bucket_bytes": int(bucket_bytes), "ps_shards": int(ps_shards), **more}


def options_of(config) -> dict:
    """:func:`strategy_options` from a run's settings (a RunConfig or anything with its two fields)."""
    return strategy_options(config.bucket_bytes, config.ps_shards)


@dataclass(frozen=True)
class Entry:
    """One strategy the registry can hand out, and where it came from."""

    name: str
    cls: type[SyncStrategy]
    source: str  # "built-in", "plugin <distribution>" or "module <path>"

    @property
    def summary(self) -> str:
        text = getattr(self.cls, "summary", "") or (inspect.getdoc(self.cls) or "").split("\n")[0]
        return text or "(no description)"

    @property
    def sharding_kind(self) -> str | None:
        return getattr(self.cls, "sharding_kind", None)

    @property
    def steps_in_place(self) -> bool:
        return bool(getattr(self.cls, "steps_in_place", True))

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(getattr(self.cls, "option_names", ()))

    @property
    def has_cost(self) -> bool:
        return callable(getattr(self.cls, "cost_s", None))


def _checked(cls, where: str) -> type[SyncStrategy]:
    if not (inspect.isclass(cls) and issubclass(cls, SyncStrategy)):
        raise UsageError(f"{where} is not a SyncStrategy subclass (see mpibench.sync.base)")
    if inspect.isabstract(cls):
        raise UsageError(f"{where} does not implement reduce(buf)")
    unknown = [o for o in getattr(cls, "option_names", ()) if o not in OPTIONS]
    if unknown:
        raise UsageError(f"{where} reads unknown option(s) {', '.join(unknown)} (known: {', '.join(OPTIONS)})")
    if getattr(cls, "overlaps", False) and (cls.start_bucket is SyncStrategy.start_bucket
                                            or cls.finish_buckets is SyncStrategy.finish_buckets):
        raise UsageError(f"{where} declares overlaps but does not implement start_bucket and finish_buckets")
    kind = getattr(cls, "sharding_kind", None)
    if kind not in (None, *SHARDING_KINDS):
        raise UsageError(f"{where} declares sharding_kind {kind!r} (one of {', '.join(SHARDING_KINDS)}, or None)")
    if issubclass(cls, ShardedStrategy) and kind is None:
        raise UsageError(f"{where} is a ShardedStrategy but declares no sharding_kind, so its ownership "
                         f"could not be judged (one of {', '.join(SHARDING_KINDS)})")
    return cls


def _load(target: str, where: str):
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's input
        raise UsageError(f"{where}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UsageError(f"{where}: module {module_name!r} has no {attr!r}") from None


def plugins() -> dict[str, Entry]:
    """Installed plugins (entry points of ``mpibench.strategies``), by name."""
    from importlib.metadata import entry_points

    found = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", "?")
        where = f"plugin {ep.name!r} ({dist})"
        if ep.name in BUILTIN:
            raise UsageError(f"{where} takes the name of a built-in strategy")
        found[ep.name] = Entry(ep.name, _checked(_load(ep.value, where), where), f"plugin {dist}")
    return found


def lookup(name: str) -> Entry:
    """The strategy called ``name``; UsageError with the choices when there is none."""
    if name in BUILTIN:
        return Entry(name, BUILTIN[name], "built-in")
    if ":" in name:
        return Entry(name, _checked(_load(name, f"--strategy {name}"), f"--strategy {name}"), f"module {name}")
    installed = plugins()
    if name in installed:
        return installed[name]
    raise UsageError(f"unknown strategy {name!r} (choose from {', '.join(names())}, "
                     "or give package.module:Class)")


def names() -> list[str]:
    """Every strategy name on offer: built-ins, then installed plugins."""
    return list(BUILTIN) + sorted(plugins())


def validate(wanted) -> list[str]:
    """``wanted`` as a list, each name checked; UsageError names the first bad one."""
    wanted = list(wanted)
    if not wanted:
        raise UsageError("no strategy given (choose from " + ", ".join(names()) + ")")
    for name in wanted:
        lookup(name)
    return wanted


def make(name: str, comm, backend, n_params: int, options: dict | None = None) -> SyncStrategy:
    return lookup(name).cls(comm, backend, n_params, options)


def _modelled_as(name: str) -> type[SyncStrategy] | None:
    """The class whose cost model prices ``name``: a strategy, or a bench row that times one
    by another path (a class's ``bench_rows``); None for anything else."""
    for cls in BUILTIN.values():
        if name in getattr(cls, "bench_rows", ()):
            return cls
    try:
        return lookup(name).cls
    except UsageError:
        return None


def cost_function(name: str):
    """``cost_s(cal, p, nbytes, options)`` of strategy ``name``, or None when it has none."""
    cls = _modelled_as(name)
    if cls is None:
        return _part_cost(name)
    return getattr(cls, "cost_s", None)


def message_bytes(name: str, p: int, nbytes: float, options: dict | None = None) -> float:
    """The size of the messages ``name`` sends for ``nbytes`` on ``p`` ranks (its class's
    ``message_bytes``; a 1/p share for a part row or anything unknown), which picks the
    calibration's band. Nothing travels apart on one rank: the whole buffer."""
    if p <= 1:
        return nbytes
    cls = _modelled_as(name)
    return (cls or SyncStrategy).message_bytes(p, nbytes, options or {})


def cost_assumptions() -> tuple[str, ...]:
    """Each built-in's line on how its cost is modelled, in the registry's order."""
    return tuple(cls.cost_assumption for cls in BUILTIN.values() if cls.cost_assumption)


def _part_cost(name: str):
    """``NAME:PART`` (a sharded strategy's ``reduce-scatter`` or ``all-gather`` bench row):
    the strategy's ``part_cost_s(part, cal, p, nbytes)``, or None."""
    base, _, part = name.rpartition(":")
    part_cost = getattr(BUILTIN.get(base), "part_cost_s", None)
    if part_cost is None or part not in ("reduce-scatter", "all-gather"):
        return None
    return lambda cal, p, nbytes, options=None: part_cost(part, cal, p, nbytes)


def listing() -> list[str]:
    """One line per strategy, for ``python -m mpibench strategies``."""
    entries = [lookup(n) for n in names()]
    width = max(len(e.name) for e in entries)
    lines = []
    for e in entries:
        options = ", ".join(e.option_names) or "-"
        cost = "cost model" if e.has_cost else "no cost model"
        lines.append(f"{e.name:<{width}}  {e.summary}  [{e.source}; options: {options}; {cost}]")
    return lines
