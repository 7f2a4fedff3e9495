"""The commands that run under ``mpirun``: ``run``, ``bench``, and the internal
``batch`` (a sweep's cases in one launch) and ``_replacement`` (a spawned worker)."""
from __future__ import annotations

import sys

import click

from mpibench.base.config import RunConfig, UsageError
from mpibench.base.mpi_threads import DEFAULT_LEVEL as DEFAULT_THREAD_LEVEL, LEVELS as THREAD_LEVELS
from mpibench.base.page_policies import DEFAULT_POLICY as DEFAULT_PAGE_POLICY, POLICIES as PAGE_POLICIES
from mpibench.base.parsing import parse_list, parse_size
from mpibench.sync.registry import BASELINE, strategy_options

from .options import DEVICES, config_from, engine_options, out_options, out_request, run_options, shared_out, with_options
from .usage import guarded


@click.command()
@click.option("--strategy", default=BASELINE, show_default=True,
              help="a name from 'python -m mpibench strategies', or package.module:Class")
@click.option("--scenario", default="none", show_default=True,
              help="a named scenario (see 'scenarios') or a TOML schedule file")
@click.option("--run-parts", default="", metavar="MODULE:NAME",
              help="build the run's trainer and recovery from a plugin: MODULE's run_parts(NAME, config) "
                   "returns a mpibench.job.parts.RunParts (the self-test plants its known-bad variants so)")
@engine_options
@run_options
def run(strategy, scenario, engine, ranks, platform, **kw):
    """One scenario under one strategy (under mpirun; or --engine sim: simulated, no mpirun)."""
    if engine == "sim":
        sys.exit(run_simulated(strategy, scenario, ranks, platform, kw))
    config = config_from(strategy, scenario, **kw)
    request = out_request(kw, scenario, config.seed)
    from mpibench.job.suite import single_run  # starts MPI: only once the options are known good

    sys.exit(guarded(lambda: single_run(config, request)))


def run_simulated(strategy, scenario, ranks, platform, kw) -> int:
    """``run`` on the simulated engine (see mpibench.sim): the same job on ``ranks`` processes."""
    from mpibench.sim.cli_entry import simulated_run

    return simulated_run(lambda: config_from(strategy, scenario, **kw),
                         lambda config: out_request(kw, scenario, config.seed), ranks, platform)


def parse_run_args(args: list[str]) -> tuple[RunConfig, str]:
    """A ``run`` argument list (``run`` first) read exactly as ``run`` reads it: (config, --out)."""
    if not args or args[0] != "run":
        raise UsageError(f"not a run command: {' '.join(args)!r}")
    try:
        params = dict(run.make_context("run", list(args[1:])).params)
    except click.ClickException as exc:
        raise UsageError(f"bad run arguments {' '.join(args)!r}: {exc.format_message()}") from None
    out = params["out"]
    for name in ("engine", "ranks", "platform"):
        params.pop(name, None)
    return config_from(params.pop("strategy"), params.pop("scenario"), **params), out


@click.command(name="batch", hidden=True)
@click.argument("plan_file", metavar="PLAN")
def batch(plan_file):
    """Internal: a sweep's cases one after another in one launch (under mpirun; see mpibench.job.batch)."""
    from mpibench.job.batch import batch_job, read_plan

    def body() -> int:
        parsed = [parse_run_args(list(c.args)) for c in read_plan(plan_file)]
        return batch_job([c for c, _ in parsed], [o for _, o in parsed])

    sys.exit(guarded(body))


@click.command(name="_replacement", hidden=True)
def replacement():
    """Internal: a replacement worker spawned by the survivors (--recovery respawn)."""
    from mpibench.faults.respawn import replacement_main
    from mpibench.job.suite import replacement_entry

    sys.exit(guarded(lambda: replacement_main(replacement_entry)))


@click.command()
@click.option("--sizes", default=None, help="message sizes, comma-separated (4K, 1M, 16MiB, 512) "
              "[default: 4K,1M,16M]")
@click.option("--min-bytes", default=None, help="size sweep as nccl-tests -b: smallest size (with --max-bytes)")
@click.option("--max-bytes", default=None, help="size sweep: largest size (nccl-tests -e)")
@click.option("--factor", type=float, default=2.0, show_default=True, help="size sweep: multiply by this (-f)")
@click.option("--strategies", default="all", show_default=True,
              help="strategies, comma-separated ('all': every registered one and the rows below; or "
                   "package.module:Class); also c_floor (the C loop) and floor (the data-movement floor, "
                   "no MPI); the blocking baseline is always measured")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True,
              help="element type (strategies reduce float32 only and are left out at float64)")
@click.option("--in-place/--out-of-place", default=False, show_default=True,
              help="placement of the blocking and C baselines (strategies always reduce in place)")
@click.option("--iterations", type=int, default=None,
              help="timed calls per candidate and round [default: 20, or more to fill --round-ms]")
@click.option("--round-ms", type=float, default=None,
              help="each candidate's batch of timed calls lasts at least this long: more calls at small "
                   "sizes, counted from the blocking baseline's time [default: 50 without --iterations, "
                   "else 0: exactly --iterations calls]")
@click.option("--rounds", type=int, default=5, show_default=True,
              help="interleaved rounds per size (median, p90 and cv% over them)")
@click.option("--warmup", type=int, default=5, show_default=True, help="untimed calls before the rounds")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the input values")
@click.option("--c-baseline", type=click.Choice(["auto", "on", "off"]), default="auto", show_default=True,
              help="C loop of MPI_Allreduce built with the MPI's mpicc (auto: when mpicc is found; "
                   "on: exit 3 if it cannot be built)")
@click.option("--model/--no-model", default=True, show_default=True,
              help="write a modelled row beside every measured one and comparison.csv")
@click.option("--calibration", default=None, type=click.Path(),
              help="reuse this calibration (JSON, run.json or a run folder) instead of calibrating")
@click.option("--bucket-bytes", default="1M", show_default=True, help="ring all-reduce bucket cap")
@click.option("--ps-shards", type=int, default=0, show_default=True,
              help="parameter-server shards (0: one per rank)")
@click.option("--device", type=click.Choice(DEVICES), default="cpu",
              show_default=True, help="where the buffers live and are reduced (emulated: see run --help)")
@click.option("--anchor", default=None, metavar="PATH",
              help="an IMB-MPI1 or osu_allreduce binary you built against the same MPI: launched as its "
                   "own job in every round and shown as the row 'anchor' (see docs/benchmarks.md)")
@click.option("--pages", type=click.Choice(PAGE_POLICIES), default=DEFAULT_PAGE_POLICY, show_default=True,
              help="memory pages under every buffer: 4k turns transparent huge pages off for the job, so "
                   "each candidate's buffers and the MPI's scratch sit on 4 KiB pages in every launch; system "
                   "leaves them where NumPy and malloc put them (partly on huge pages, differing between "
                   "candidates and launches; see docs/benchmarks.md)")
@click.option("--thread-level", type=click.Choice(THREAD_LEVELS), default=DEFAULT_THREAD_LEVEL, show_default=True,
              help="thread support MPI is started with: multiple is mpi4py's default, what Python training "
                   "code gets; single is what C benchmarks such as IMB-MPI1 and OSU run with (Open MPI pays "
                   "for thread safety in every call under multiple: about 0.4 us of a 3 us 4 KiB Allreduce here)")
@click.option("--profile", "profile_name", default=None, metavar="NAME",
              help="instead of sizes: a real model's step (resnet50, resnet101, vgg16, bert-large, gpt2, "
                   "gpt2-medium, llama7b-tp8 or a profile .toml) whose gradient buckets are all-reduced "
                   "(MPI_Iallreduce) during a timed stand-in for its backward pass; prints backward, sync and "
                   "exposed sync (--rounds steps after --warmup) and writes overlap.csv")
@click.option("--bucket-policy", type=click.Choice(["ddp", "horovod", "none"]), default="ddp", show_default=True,
              help="with --profile: DDP's buckets, Horovod's fused cycles, or one bucket after the backward pass")
@click.option("--overlap/--no-overlap", default=True, show_default=True,
              help="with --profile: start each bucket as its gradients are ready, or every one after the backward")
@click.option("--local-batch", type=click.IntRange(min=1), default=8, show_default=True,
              help="with --profile: samples per rank (the backward's work)")
@click.option("--flops-per-s", type=float, default=None,
              help="with --profile: the compute rate the backward stands in for [default: this host's float32 "
                   "matmul rate]")
@click.option("--launches", type=click.IntRange(min=1), default=1, show_default=True,
              help="run without mpirun: launch the job this many times (each into OUT/launch-NN, each "
                   "starting with a fingerprint) and write medians over launches with 95 % intervals and a "
                   "verdict per comparison (see docs/intervals.md)")
@click.option("--np", "np_ranks", type=click.IntRange(min=1), default=None,
              help="with --launches: ranks per launch [default: 2]")
@click.option("--launch-deadline", type=float, default=None,
              help="with --launches: seconds before one launch is killed as hung [default: 3600]")
@with_options(out_options("bench.csv"))
def bench(sizes, min_bytes, max_bytes, factor, strategies, dtype, in_place, iterations, round_ms, rounds, warmup, seed,
          bucket_bytes, ps_shards, device, c_baseline, model, calibration, anchor, pages, thread_level, launches,
          np_ranks, launch_deadline, profile_name, bucket_policy, overlap, local_batch, flops_per_s, **kw):
    """Collective microbenchmarks (under mpirun): time, bandwidth, result check and model per size.

    Every size times, in interleaved rounds, the blocking MPI_Allreduce from
    mpi4py (the denominator of every ratio), the same loop in C when built,
    and each strategy. GB/s = 1e9 B/s; busbw = algbw * 2(p-1)/p as in
    nccl-tests; at p=1 nothing travels and no bandwidth is given. Exit 1 if
    any reduction was wrong, 3 if --c-baseline on could not be built.
    """
    if launches > 1:  # the driver, outside MPI: nothing below imports mpi4py in this process
        sys.exit(launch_bench(launches, np_ranks or 2, 3600.0 if launch_deadline is None else launch_deadline, kw))
    if np_ranks is not None or launch_deadline is not None:
        raise UsageError("--np and --launch-deadline go with --launches N (N > 1); under mpirun its -n decides")
    if profile_name is not None:
        sys.exit(bench_profile(profile_name, bucket_policy, overlap, local_batch, flops_per_s, rounds, warmup,
                               thread_level, kw))
    # Nothing imported before start_mpi_with starts MPI: bad input is refused in a moment, and
    # MPI then starts with the thread level asked for.
    from mpibench.job.bench import DEFAULT_SIZES, BenchPlan, split_names, sweep_sizes
    from mpibench.job.bench.plan import DEFAULT_ITERATIONS, round_seconds, validate, wants_floor

    if min_bytes is not None or max_bytes is not None:
        if sizes is not None or min_bytes is None or max_bytes is None:
            raise UsageError("give either --sizes or both --min-bytes and --max-bytes")
        sizes_bytes = sweep_sizes(parse_size(min_bytes), parse_size(max_bytes), factor)
    else:
        sizes_bytes = parse_list(sizes or DEFAULT_SIZES, "--sizes", parse_size)
    names, c_named = split_names(strategies)
    plan = BenchPlan(strategies=names, sizes_bytes=tuple(sizes_bytes), dtype=dtype, in_place=in_place,
                     warmup=warmup, iterations=DEFAULT_ITERATIONS if iterations is None else iterations,
                     round_s=round_seconds(round_ms, iterations), rounds=rounds, seed=seed,
                     c_floor="on" if c_named and c_baseline == "auto" else c_baseline, model=model,
                     calibration=calibration, anchor=anchor, floor=wants_floor(strategies), pages=pages,
                     thread_level=thread_level,
                     options=strategy_options(parse_size(bucket_bytes), ps_shards))
    validate(plan)
    if seed < 0 or ps_shards < 0 or parse_size(bucket_bytes) < 4:
        raise UsageError("--seed and --ps-shards must be 0 or positive, --bucket-bytes at least 4")
    if calibration is not None and model:
        from mpibench.job.bench.model import load_calibration

        load_calibration(calibration)  # read now: a bad file must not leave an empty folder behind
    request = out_request(kw, "bench", seed)  # bad input fails before any folder is made
    start_mpi_with(thread_level)
    from mpibench.job.bench.command import bench_command

    sys.exit(guarded(lambda: bench_command(plan, device, shared_out(request))))


def bench_profile(name, policy, overlap, local_batch, flops_per_s, steps, warmup, thread_level, kw) -> int:
    """``bench --profile``: read and check the input, then measure the overlapped steps under MPI."""
    from mpibench.profiles import ProfileError, profile

    try:
        model = profile(name)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    if flops_per_s is not None and not flops_per_s > 0:
        raise UsageError(f"--flops-per-s must be positive, got {flops_per_s}")
    if steps < 1 or warmup < 0:
        raise UsageError(f"--rounds (steps) must be at least 1 and --warmup 0 or more, got {steps} and {warmup}")
    if flops_per_s is None:
        from mpibench.kernels.host_rate import host_flops_per_s

        flops_per_s = host_flops_per_s()
    request = out_request(kw, "bench", 0)
    start_mpi_with(thread_level)
    from mpibench.job.bench.overlap import OverlapPlan, overlap_command

    plan = OverlapPlan(model, policy, overlap, local_batch, flops_per_s, steps, warmup)
    return guarded(lambda: overlap_command(plan, shared_out(request)))


def start_mpi_with(thread_level: str) -> None:
    """Have MPI started with ``thread_level``; exit 3 (could not run) when it already was otherwise."""
    from mpibench.base.exits import EXIT_COULD_NOT_RUN
    from mpibench.base.mpi_threads import AlreadyStarted, ask_for

    try:
        ask_for(thread_level)
    except AlreadyStarted as exc:
        print(f"bench: could not run: {exc}", file=sys.stderr, flush=True)
        sys.exit(EXIT_COULD_NOT_RUN)


def launch_bench(launches: int, ranks: int, deadline_s: float, kw: dict) -> int:
    """``bench --launches N``: relaunch ``bench`` N times under the launcher (mpibench.drive.launches)."""
    from mpibench.base.exits import EXIT_COULD_NOT_RUN
    from mpibench.drive.launch import LaunchError, preflight
    from mpibench.drive.launches import clear_launches, run_launches
    from mpibench.job.outdir import resolve

    from .selflaunch import under_launcher

    if under_launcher():
        raise UsageError("--launches relaunches bench itself: run it without mpirun "
                         "(python -m mpibench bench --launches N --np P ...)")
    if not 0 < deadline_s < float("inf"):
        raise UsageError(f"--launch-deadline must be a positive number of seconds, got {deadline_s:g}")
    request = out_request(kw, "bench-launches", 0)
    try:
        launcher = preflight(None, ranks)
    except LaunchError as exc:
        print(f"bench: could not run: {exc}", file=sys.stderr, flush=True)
        return EXIT_COULD_NOT_RUN
    argv = sys.argv[sys.argv.index("bench") + 1:] if "bench" in sys.argv else []
    out = resolve(request)
    if request.force:
        clear_launches(out)
    return run_launches(launcher, ranks, launches, argv, out, deadline_s)
