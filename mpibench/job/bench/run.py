"""Run a :class:`~.plan.BenchPlan` on a communicator and write ``bench.csv``.

For each size the candidates (blocking baseline, C floor when loaded, each
strategy) are timed in interleaved rounds (:mod:`.rounds`) on a duplicate of
the communicator; every rank returns the same rows, rank 0 writes them and
prints one line per row. With the model on, a calibration (measured first,
while the job is quiet, or loaded) gives every measured row a ``modelled``
twin, and ``comparison.csv`` holds the flagged disagreements.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from mpi4py import MPI

from mpibench.sync.comm import Comm
from mpibench.base.mpi_settings import describe, mpi_settings
from mpibench.base import mpi_threads
from mpibench.base.records import BENCH_COLUMNS, CsvLog

from . import cfloor
from . import pages
from .anchor import ANCHOR, NOT_CHECKED, AnchorFailed, AnchorRun, label as anchor_label
from .floor import FLOOR, LABEL as FLOOR_LABEL, MovementFloor
from . import sharded
from .candidates import BlockingAllreduce, CFloorAllreduce, StrategyReduce
from .inputs import DTYPES, Expected
from .names import BLOCKING
from .model import disagreements, flag_lines, load_calibration, modelled_rows
from .plan import BenchPlan
from .rounds import calls_per_round, ratio_to, run_rounds
from .rows import ONE_LAUNCH_NOTE, header_line, measured_row, progress_line, summary_lines


class CouldNotRun(Exception):
    """The benchmark could not measure what was asked (exit 3)."""


@dataclass
class Outcome:
    rows: list  # measured and modelled rows, as written
    c_floor: str  # the library's path, or why it is absent


def _say(world: MPI.Comm, text: str) -> None:
    if world.Get_rank() == 0:
        print(text, flush=True)


def run_bench(world: MPI.Comm, plan: BenchPlan, backend, out_dir: str | None, append: bool = False) -> Outcome:
    """Every size of ``plan``, its buffers on the pages ``plan.pages`` asks for (:mod:`.pages`)."""
    with pages.hold_small_pages(plan.pages) as why_not:
        return _run_bench(world, plan, backend, out_dir, append, why_not)


def _pages_line(why_not: str | None) -> str:
    line = pages.describe(pages.numpy_madvises_hugepages(), pages.malloc_madvises_hugepages(), pages.thp_mode(),
                          pages.huge_pages_off_here())
    return line if why_not is None else f"{line} ({why_not})"


def _run_bench(world: MPI.Comm, plan: BenchPlan, backend, out_dir: str | None, append: bool,
               why_not: str | None) -> Outcome:
    mpi = world.Dup()
    comm = Comm(mpi, deadline_s=float(plan.options.get("deadline_s", 120.0)))
    cal = _calibration(world, plan)
    floor, where = (None, "off") if plan.c_floor == "off" else cfloor.load(mpi)
    if floor is None and plan.c_floor == "on":
        mpi.Free()
        raise CouldNotRun(f"the C baseline could not be built or loaded: {where}")
    _say(world, f"# p={world.Get_size()}  dtype {plan.dtype}  op sum  baselines "
                f"{'in' if plan.in_place else 'out-of'}-place  warm-up {plan.warmup}  "
                f"{plan.rounds} rounds x {_calls_said(plan)}  GB/s = 1e9 B/s"
                + ("" if floor or plan.c_floor == "off" else f"\n# C floor left out: {where}")
                + ("" if plan.anchor is None else f"\n# anchor: {anchor_label(plan.anchor)}, launched by rank 0 "
                   f"in every round while the benchmark's ranks sleep")
                + f"\n# pages: {_pages_line(why_not)}"
                + f"\n# MPI settings from the environment: {describe(mpi_settings())}"
                + f"\n# MPI thread level: {mpi_threads.describe(plan.thread_level)}")
    if plan.dtype != "float32" and plan.strategies:
        _say(world, f"# strategies left out at {plan.dtype}: they reduce float32 step buffers")
    log = _open_log(world, out_dir, append)
    crowding = oversubscription(world, out_dir)
    if crowding:
        _say(world, f"# {crowding}")
    rows = []
    try:
        _say(world, header_line())
        for n_bytes in plan.sizes_bytes:
            for row in _one_size(comm, plan, floor, backend, n_bytes, crowding):
                rows.append(row)
                if log is not None:
                    log.write(row)
                _say(world, progress_line(row))
        for line in summary_lines(rows):
            _say(world, line)
        _say(world, ONE_LAUNCH_NOTE)
        if cal is not None:
            rows += _model(world, cal, plan, rows, log, out_dir)
    finally:
        if log is not None:
            log.close()
        mpi.Free()
    return Outcome(rows, where)


def _calls_said(plan: BenchPlan) -> str:
    if plan.round_s <= 0:
        return f"{plan.iterations} calls"
    return f"at least {plan.iterations} calls, enough to last {plan.round_s * 1e3:g} ms (column iterations)"


def _calibration(world: MPI.Comm, plan: BenchPlan):
    if not plan.model:
        return None
    if plan.calibration:
        return load_calibration(plan.calibration)
    from mpibench.job.calibrate import calibrate_collectives

    _say(world, "# calibrating the model (ping-pong, reduction throughput, call overhead) ...")
    return calibrate_collectives(world)


def _open_log(world: MPI.Comm, out_dir: str | None, append: bool):
    if out_dir is None or world.Get_rank() != 0:
        return None
    os.makedirs(out_dir, exist_ok=True)
    return CsvLog(os.path.join(out_dir, "bench.csv"), BENCH_COLUMNS, append)


def measure_size(comm: Comm, plan: BenchPlan, floor, backend, n_bytes: int) -> tuple[list, dict, int]:
    """Time every candidate at one size: (candidate names and placements, name -> Spread,
    timed calls per round)."""
    count = n_bytes // plan.itemsize
    expected = Expected(plan.seed, comm.rank, comm.size, count, DTYPES[plan.dtype])
    candidates = [BlockingAllreduce(comm.mpi, expected, plan.in_place)]
    if floor is not None:
        candidates.append(CFloorAllreduce(floor, comm.mpi, expected, plan.in_place))
    if plan.anchor is not None:
        candidates.append(AnchorRun(plan.anchor, n_bytes, plan.warmup))
    if plan.floor:
        candidates.append(MovementFloor(comm.mpi, count, DTYPES[plan.dtype]))
    if plan.dtype == "float32":
        from mpibench.sync import make_strategy

        for name in plan.strategies:
            try:
                strategy = make_strategy(name, comm, backend, count - 1, dict(plan.options))
            except ValueError as exc:  # e.g. a strategy that needs more ranks; the same on every rank
                if comm.rank == 0:
                    print(f"# {name} left out at p={comm.size}, {n_bytes} B: {exc}", flush=True)
                continue
            candidates.append(StrategyReduce(strategy, comm, expected, backend))
            candidates += sharded.parts_of(strategy, comm, expected, backend)  # reduce-scatter, all-gather
    try:
        calls = calls_per_round(comm.mpi, candidates[0], plan.iterations, plan.round_s)
        spreads = run_rounds(comm.mpi, candidates, plan.warmup, calls, plan.rounds)
    except AnchorFailed as exc:
        raise CouldNotRun(f"the anchor did not run: {exc}") from None
    finally:
        for c in candidates:
            c.close()
    return [(c.name, c.in_place) for c in candidates], spreads, calls


def _one_size(comm: Comm, plan: BenchPlan, floor, backend, n_bytes: int, crowding: str = "") -> list[dict]:
    names, spreads, calls = measure_size(comm, plan, floor, backend, n_bytes)
    base = spreads[BLOCKING]
    rows = [measured_row(name, comm.size, n_bytes, plan.dtype, in_place, plan.warmup, calls,
                         plan.rounds, spreads[name], ratio_to(base, spreads[name])) for name, in_place in names]
    for row in rows:
        if row["strategy"] == ANCHOR:
            row.update(label=anchor_label(plan.anchor), note="; ".join(n for n in (row["note"], NOT_CHECKED) if n))
        if row["strategy"] == FLOOR:
            row.update(label=FLOOR_LABEL, errors=None, note="; ".join(n for n in (row["note"], "no MPI") if n))
        row["note"] = "; ".join(n for n in (row["note"], crowding) if n)
        sharded.fix_row(row)
    return rows


def oversubscription(world: MPI.Comm, out_dir: str | None = None) -> str:
    """A note when a host runs more ranks than its ranks' affinity masks together hold
    CPUs (figures then time-share); judged from every rank, whatever the binding, which
    run.json records (``host_cpus``) when there is an ``out_dir``."""
    from mpibench.job.hostload import host_cores, oversubscription_note, record_host_cpus

    hosts = host_cores(world)
    if out_dir is not None and world.Get_rank() == 0:
        record_host_cpus(out_dir, hosts)
    return oversubscription_note(hosts)


def _model(world: MPI.Comm, cal, plan: BenchPlan, measured: list[dict], log, out_dir) -> list[dict]:
    rows, unknown = modelled_rows(cal, measured, plan.options)
    if world.Get_rank() != 0:
        return rows
    for row in rows:
        if log is not None:
            log.write(row)
    if unknown:
        print(f"# no cost model for {', '.join(unknown)}: measured rows only", flush=True)
    comparison = disagreements(cal, measured + rows, plan.options)
    within = int(comparison.within.astype(bool).sum())
    print(f"# model: {within} of {len(comparison)} measured rows within ±{comparison.tolerance.max():.0%} "
          f"of the model" if len(comparison) else "# model: nothing to compare", flush=True)
    for line in flag_lines(comparison):
        print(line, flush=True)
    if out_dir is not None:
        comparison.to_csv(os.path.join(out_dir, "comparison.csv"), index=False)
        from mpibench.base import runinfo

        runinfo.update(out_dir, {"calibration": cal.as_dict(), "model_options": plan.options})
    return rows
