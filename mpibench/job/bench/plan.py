"""What one ``bench`` invocation measures, checked before any MPI work (bad input: exit 2)."""
from __future__ import annotations

from dataclasses import dataclass, field

from mpibench.base.config import UsageError
from mpibench.base.mpi_threads import DEFAULT_LEVEL
from mpibench.base.page_policies import DEFAULT_POLICY, POLICIES
from mpibench.base.parsing import parse_list

from .names import BASELINES, BLOCKING, C_FLOOR
from .inputs import DTYPES

DEFAULT_SIZES = "4K,1M,16M"
MAX_SWEEP_SIZES = 64
DEFAULT_ROUND_S = 0.05  # a batch of calls per candidate and round lasts at least this long by default
DEFAULT_ITERATIONS = 20
MAX_ROUND_S = 10.0


@dataclass(frozen=True)
class BenchPlan:
    """Candidates, sizes and the knobs recorded in every row."""

    strategies: tuple  # registry names; the baselines are separate
    sizes_bytes: tuple
    dtype: str = "float32"
    in_place: bool = False  # the baselines' placement; strategies always reduce in place
    warmup: int = 5
    iterations: int = DEFAULT_ITERATIONS  # timed calls per round (the least, when round_s is above 0)
    round_s: float = 0.0  # above 0: each batch's calls last at least this long (more calls when small)
    rounds: int = 5
    seed: int = 0
    c_floor: str = "auto"  # auto | on | off
    model: bool = True
    calibration: str | None = None
    options: dict = field(default_factory=dict)
    anchor: str | None = None  # an IMB-MPI1 or osu_allreduce binary, run as its own job (anchor.py)
    floor: bool = False  # the data-movement floor row (floor.py)
    pages: str = DEFAULT_POLICY  # 4k: huge pages off while measuring, every buffer alike; system: as the OS places them
    thread_level: str = DEFAULT_LEVEL  # the thread support MPI was asked to start with (base.mpi_threads)

    @property
    def itemsize(self) -> int:
        return 8 if self.dtype == "float64" else 4


def registered() -> list[str]:
    """Every strategy on offer: the built-ins and installed plugins (never a hard-coded list)."""
    from mpibench.sync.registry import names

    return names()


def split_names(text: str) -> tuple[tuple, bool]:
    """``--strategies`` -> (strategy names, C floor named?); ``all`` means every registered one.

    The blocking baseline is always measured: it is every ratio's denominator."""
    names = list(parse_list(text, "--strategies"))
    known = registered()
    if "all" in names:
        names = [n for n in names if n != "all"] + known
    names = [n for n in names if n != "floor"]  # a row of its own (wants_floor)
    unknown = [n for n in names if n not in known and n not in BASELINES and ":" not in n]
    if unknown:
        raise UsageError(f"unknown strategy {', '.join(unknown)} "
                         f"(choose from all, {', '.join(known + list(BASELINES))}, or package.module:Class)")
    modules = [n for n in names if ":" in n]
    if modules:  # package.module:Class must load and be a strategy
        from mpibench.sync.registry import validate

        validate(modules)
    strategies = tuple(dict.fromkeys(n for n in names if n not in BASELINES))
    return strategies, C_FLOOR in names


def wants_floor(text: str) -> bool:
    """Whether ``--strategies`` names the data-movement floor (``floor``; ``all`` includes it)."""
    names = parse_list(text, "--strategies")
    return "floor" in names or "all" in names


def sweep_sizes(min_bytes: int, max_bytes: int, factor: float) -> list[int]:
    """nccl-tests' ``-b MIN -e MAX -f FACTOR``: MIN, MIN*F, ... up to MAX."""
    if min_bytes <= 0 or max_bytes < min_bytes:
        raise UsageError(f"--min-bytes must be positive and at most --max-bytes (got {min_bytes}, {max_bytes})")
    if not factor > 1:
        raise UsageError(f"--factor must be greater than 1 (got {factor})")
    sizes, n = [], float(min_bytes)
    while n <= max_bytes:
        sizes.append(int(n))
        n *= factor
        if len(sizes) > MAX_SWEEP_SIZES:
            raise UsageError(f"the sweep has more than {MAX_SWEEP_SIZES} sizes; raise --factor")
    return sizes


def validate(plan: BenchPlan) -> None:
    if plan.dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)} (got {plan.dtype})")
    if not plan.sizes_bytes:
        raise UsageError("--sizes needs at least one size")
    for n in plan.sizes_bytes:
        if n < plan.itemsize or n % plan.itemsize:
            raise UsageError(f"size {n} B is not a positive multiple of {plan.itemsize} bytes ({plan.dtype})")
    if not 0 <= plan.round_s <= MAX_ROUND_S:
        raise UsageError(f"--round-ms must be from 0 to {MAX_ROUND_S * 1e3:g} (got {plan.round_s * 1e3:g})")
    if plan.iterations < 1 or plan.warmup < 0 or plan.rounds < 1:
        raise UsageError(f"--iterations and --rounds must be at least 1 and --warmup at least 0 "
                         f"(got {plan.iterations}, {plan.rounds}, {plan.warmup})")
    if plan.pages not in POLICIES:
        raise UsageError(f"--pages must be one of {', '.join(POLICIES)} (got {plan.pages})")
    if plan.c_floor not in ("auto", "on", "off"):
        raise UsageError(f"--c-baseline must be auto, on or off (got {plan.c_floor})")
    if plan.anchor is not None:
        import os

        if not (os.path.isfile(plan.anchor) and os.access(plan.anchor, os.X_OK)):
            raise UsageError(f"--anchor {plan.anchor}: not an executable file (an IMB-MPI1 or "
                             f"osu_allreduce binary built against this MPI)")
        if plan.dtype != "float32":
            raise UsageError("--anchor times float32 sums (IMB-MPI1 and osu_allreduce do): drop --dtype float64")


def round_seconds(round_ms: float | None, iterations: int | None) -> float:
    """``--round-ms`` in seconds: as given, else the default when the call count is left to
    bench, else 0 (a count given is run exactly)."""
    if round_ms is not None:
        return round_ms / 1e3
    return DEFAULT_ROUND_S if iterations is None else 0.0


__all__ = ["BenchPlan", "BLOCKING", "C_FLOOR", "DEFAULT_SIZES", "registered", "split_names",
           "round_seconds", "sweep_sizes", "validate"]
