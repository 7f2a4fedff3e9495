"""``python -m mpibench bench`` and the main job's benchmark section."""
from __future__ import annotations

from dataclasses import replace

from mpi4py import MPI

from mpibench.base.config import UsageError
from mpibench.base.exits import EXIT_COULD_NOT_RUN, EXIT_OK, EXIT_VIOLATION
from mpibench.sync.registry import options_of

from .plan import BenchPlan, registered, validate
from .rows import human_bytes
from .run import CouldNotRun, run_bench


def bench_command(plan: BenchPlan, device: str, out: str) -> int:
    """Exit 0; 1 when any reduction was wrong; 3 when ``--c-baseline on`` could not be built."""
    validate(plan)
    if plan.options.get("bucket_bytes", 4) < 4:
        raise UsageError(f"--bucket-bytes must hold at least one float32 (4 bytes), "
                         f"got {plan.options['bucket_bytes']}")
    if plan.options.get("ps_shards", 0) < 0:
        raise UsageError(f"--ps-shards must be 0 (one per rank) or positive, got {plan.options['ps_shards']}")
    from mpibench.kernels import select_backend

    try:
        backend = select_backend(device)
    except (RuntimeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    world = MPI.COMM_WORLD
    from . import fingerprint

    fingerprint.record(world, out)  # first, so the launch's state is named before anything else runs
    try:
        outcome = run_bench(world, plan, backend, out)
    except CouldNotRun as exc:
        if world.Get_rank() == 0:
            print(f"bench: could not run: {exc}", flush=True)
        return EXIT_COULD_NOT_RUN
    errors = sum(r["errors"] or 0 for r in outcome.rows if r["tag"] == "measured")
    if errors:
        if world.Get_rank() == 0:
            print(f"bench: {errors} wrong elements: a reduction gave a wrong sum", flush=True)
        return EXIT_VIOLATION
    return EXIT_OK


# The main job's benchmark: small sizes and few calls, so it adds seconds, not minutes.
MAIN_JOB_SIZES = (4 << 10, 64 << 10, 1 << 20)


def main_job_bench(comm: MPI.Comm, out_dir: str, config, backend, progress=None) -> list[dict]:
    """The benchmarks at the end of the main job: rows in ``out_dir/bench.csv``.

    The model's rows come later from the main job's own calibration."""
    strategies = tuple(registered())
    if progress is not None:
        progress(f"benchmarks (blocking, C floor, {', '.join(strategies)}; "
                 f"{', '.join(human_bytes(n) for n in MAIN_JOB_SIZES)}) ...")
    plan = BenchPlan(strategies=strategies, sizes_bytes=MAIN_JOB_SIZES, warmup=2, iterations=4, rounds=3,
                     seed=config.seed, model=False,
                     options=options_of(config))
    rows = run_bench(comm, replace(plan), backend, out_dir).rows
    wrong = [f"{r['strategy']} at {human_bytes(r['bytes'])}" for r in rows if r["errors"]]
    if wrong and comm.Get_rank() == 0:
        print(f"bench: wrong sums from {', '.join(wrong)} (see bench.csv, column errors)", flush=True)
    return rows
