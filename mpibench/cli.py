"""Command line: ``python -m mpibench [COMMAND]`` (see ``--help``).

Exit status: 0 when every invariant held, 1 when one was violated or a run
could not go on, 2 for bad usage or bad input (one line, no traceback), 3 when
the checker cannot judge the run (history missing or incomplete).

Longer than the other modules: one thin click command per subcommand, each only
parsing options and handing over to the layer below, kept together so that the
whole command line reads in one file.
"""
from __future__ import annotations

import math
import os
import sys
import time
import traceback

import click

from mpibench.base.config import RunConfig, UsageError

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_COULD_NOT_RUN = 0, 1, 2, 3


def launched_rank() -> int:
    """This process's rank as the launcher tells it, without initialising MPI."""
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def say(message: str, err: bool = False) -> None:
    """Print on the first rank only, so a job prints each line once."""
    if launched_rank() == 0:
        click.echo(message, err=err)


def launched_size() -> int:
    """How many ranks the launcher started, without initialising MPI (1 when run bare)."""
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1


# Every rank parses the same arguments and fails alike, but only the first
# prints. When another rank exits first, the launcher may kill the first rank
# before it has written its line (seen here in about 1 launch in 30), and the
# user gets exit 2 with no word why. So on a usage error the ranks meet after
# the first has printed; the meeting is bounded so that a rank that never
# arrives cannot turn bad input into a hang.
USAGE_MEETING_DEADLINE_S = 15.0


def meet_after_the_error_line(deadline_s: float = USAGE_MEETING_DEADLINE_S) -> None:
    """A barrier across the launched ranks that gives up after ``deadline_s``."""
    if launched_size() < 2:
        return
    from mpi4py import MPI

    request = MPI.COMM_WORLD.Ibarrier()
    give_up_at = time.monotonic() + deadline_s
    while not request.Test() and time.monotonic() < give_up_at:
        time.sleep(0.005)


def fail_usage(message: str):
    say(f"mpibench: error: {message}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    meet_after_the_error_line()
    sys.exit(EXIT_USAGE)


def abort_job(exc: BaseException) -> None:
    """An unhandled exception on any rank ends the whole job with a message."""
    from mpi4py import MPI

    from mpibench.base.runinfo import this_host

    prefix = f"[{MPI.COMM_WORLD.Get_rank()}@{this_host()}]"
    sys.stderr.write(f"{prefix} unhandled error, aborting the job:\n")
    sys.stderr.write("".join(f"{prefix} {line}\n" for line in
                             "".join(traceback.format_exception(exc)).splitlines()))
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(EXIT_VIOLATION)


def size_option(text: str) -> int:
    """``4K``, ``1M``, ``16MiB``, ``512`` -> bytes (binary multiples)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    number, unit = (t[:-1], t[-1]) if t and t[-1] in "KMG" else (t, "")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise UsageError(f"cannot read size {text!r} (examples: 4K, 1M, 16M, 512)") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise UsageError(f"size {text!r} must be a whole, non-negative number of bytes")
    return int(value)


# ---------------------------------------------------------------------------- options
def run_options(func):
    """Options shared by ``run`` and the main job."""
    d = RunConfig()
    opts = [
        click.option("--steps", type=int, default=d.steps, show_default=True, help="training steps per run"),
        click.option("--seed", type=int, default=d.seed, show_default=True,
                     help="root seed: data, shards, epoch orders, weights and fault schedules derive from it"),
        click.option("--recovery", type=click.Choice(["shrink", "respawn"]), default=d.recovery,
                     show_default=True, help="after a killed rank: continue smaller, or spawn a replacement"),
        click.option("--check-every", type=int, default=d.check_every, show_default=True,
                     help="check the six invariants every K steps"),
        click.option("--device", type=click.Choice(["cpu", "gpu", "auto", "emulated"]), default=d.device,
                     show_default=True, help="where gradient buffers live and are reduced (emulated: "
                     "the GPU code path on host memory, every implicit host/device crossing an error)"),
        click.option("--samples", type=int, default=d.samples, show_default=True, help="data set size"),
        click.option("--features", type=int, default=d.features, show_default=True, help="input features"),
        click.option("--hidden", type=int, default=d.hidden, show_default=True, help="hidden units of the MLP"),
        click.option("--classes", type=int, default=d.classes, show_default=True, help="output classes"),
        click.option("--batch-size", type=int, default=d.batch_size, show_default=True,
                     help="local batch size per worker (epochs end on a shorter batch)"),
        click.option("--lr", type=float, default=d.lr, show_default=True, help="SGD learning rate"),
        click.option("--bucket-bytes", default=str(d.bucket_bytes), show_default=True,
                     help="ring all-reduce bucket cap (4K, 1M, ...)"),
        click.option("--ps-shards", type=int, default=d.ps_shards, show_default=True,
                     help="parameter-server shards (0: one per member)"),
        click.option("--straggler-deadline", type=float, default=d.straggler_deadline, show_default=True,
                     help="seconds to wait for a late worker before dropping it from the step (0: wait)"),
        click.option("--deadline-s", type=float, default=d.deadline_s, show_default=True,
                     help="longest wait for any message before the run is declared stuck"),
        *out_options("CSVs, run.json and report.html"),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def out_options(what: str) -> list:
    """``--out`` and ``--force``: see :mod:`mpibench.job.outdir` for the policy."""
    return [
        click.option("--out", type=click.Path(file_okay=False), default=None,
                     help=f"output folder for {what} [default: a fresh "
                          "mpibench-out/<UTC time>-<kind>-seed<S>/, linked as mpibench-out/latest]; "
                          "a folder that already holds results is refused unless --force"),
        click.option("--force", is_flag=True, default=False,
                     help="let --out replace the results a folder already holds (they are removed first)"),
    ]


def _with_options(options):
    """Apply a list of click options (shared between commands) to a command."""
    def apply(func):
        for opt in reversed(options):
            func = opt(func)
        return func
    return apply


def out_request(kw: dict, kind: str, seed: int):
    """The validated output request; refuses a folder that holds results (exit 2) before any write."""
    from mpibench.job.outdir import OutDirError, OutRequest

    request = OutRequest(kw.pop("out", None), kw.pop("force", False), kind, seed)
    try:
        request.check()
    except OutDirError as exc:
        raise UsageError(str(exc)) from None
    return request


def config_from(strategy: str, scenario: str, **kw) -> RunConfig:
    kw["bucket_bytes"] = size_option(str(kw["bucket_bytes"]))
    kw.pop("out", None)
    kw.pop("force", None)
    config = RunConfig(strategy=strategy, scenario=scenario, **kw)
    config.check_values()
    return config


# ---------------------------------------------------------------------------- commands
class Cli(click.Group):
    """Turns usage errors into one line and exit 2, and aborts the job on a crash."""

    def main(self, args=None, **extra):
        try:
            return super().main(args=args, standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            sys.exit(130)
        except click.UsageError as exc:
            fail_usage(exc.format_message().splitlines()[0])
        except UsageError as exc:
            fail_usage(str(exc))
        except click.ClickException as exc:
            fail_usage(exc.format_message())


@click.group(cls=Cli, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@run_options
@click.pass_context
def main(ctx, **kw):
    """MPI benchmark and correctness suite for data-parallel gradient sync.

    Without a command (under mpirun) this is the main job: every named fault
    scenario under ring and PS with identical schedules, then the collective
    benchmarks; CSVs, run.json and report.html go to --out, and a summary table
    is printed. Exit status (from the checker's verdict.json): 0 all invariants
    held, 1 a violation (the message names step, invariant and the replay
    command), 2 bad usage or input, 3 the history cannot be judged.

    \b
    Example:  mpirun -n 8 --oversubscribe --with-ft ulfm --prtemca state_base_recoverable 1 \
              python -m mpibench --out results
    """
    if ctx.invoked_subcommand is not None:
        return
    config = config_from("native", "none", **kw)
    request = out_request(kw, "main", config.seed)
    from mpibench.drive.jobsweep import plan_job_sweep
    from mpibench.job.suite import main_job

    def plan_sweep(base, world, out):
        return plan_job_sweep(base, world, out, parse_run_args)

    sys.exit(_guarded(lambda: main_job(config, request, plan_sweep)))


@main.command()
@click.option("--strategy", default="native", show_default=True,
              help="a name from 'python -m mpibench strategies', or package.module:Class")
@click.option("--scenario", default="none", show_default=True,
              help="a named scenario (see 'scenarios') or a TOML schedule file")
@click.option("--mutant", default=None, hidden=True,
              help="self-test only: run a known-bad reduction (see mpibench.job.mutants)")
@run_options
def run(strategy, scenario, mutant, **kw):
    """One scenario under one strategy (under mpirun)."""
    from mpibench.job.suite import single_run

    if mutant is not None:
        from mpibench.job.mutants import install

        try:
            install(mutant)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    config = config_from(strategy, scenario, **kw)
    request = out_request(kw, scenario, config.seed)
    sys.exit(_guarded(lambda: single_run(config, request)))


@main.command()
@click.option("--sizes", default=None, help="message sizes, comma-separated (4K, 1M, 16MiB, 512) "
              "[default: 4K,1M,16M]")
@click.option("--min-bytes", default=None, help="size sweep as nccl-tests -b: smallest size (with --max-bytes)")
@click.option("--max-bytes", default=None, help="size sweep: largest size (nccl-tests -e)")
@click.option("--factor", type=float, default=2.0, show_default=True, help="size sweep: multiply by this (-f)")
@click.option("--strategies", default="all", show_default=True,
              help="strategies, comma-separated ('all': every registered one; or package.module:Class); "
                   "the blocking baseline is always measured")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True,
              help="element type (strategies reduce float32 only and are left out at float64)")
@click.option("--in-place/--out-of-place", default=False, show_default=True,
              help="placement of the blocking and C baselines (strategies always reduce in place)")
@click.option("--iterations", type=int, default=20, show_default=True, help="timed calls per round")
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
@click.option("--device", type=click.Choice(["cpu", "gpu", "auto", "emulated"]), default="cpu",
              show_default=True, help="where the buffers live and are reduced (emulated: see run --help)")
@_with_options(out_options("bench.csv"))
def bench(sizes, min_bytes, max_bytes, factor, strategies, dtype, in_place, iterations, rounds, warmup, seed,
          bucket_bytes, ps_shards, device, c_baseline, model, calibration, **kw):
    """Collective microbenchmarks (under mpirun): time, bandwidth, result check and model per size.

    Every size times, in interleaved rounds, the blocking MPI_Allreduce from
    mpi4py (the denominator of every ratio), the same loop in C when built,
    and each strategy. GB/s = 1e9 B/s; busbw = algbw * 2(p-1)/p as in
    nccl-tests; at p=1 nothing travels and no bandwidth is given. Exit 1 if
    any reduction was wrong, 3 if --c-baseline on could not be built.
    """
    from mpibench.job.bench import DEFAULT_SIZES, BenchPlan, bench_command, split_names, sweep_sizes
    from mpibench.job.bench.plan import validate

    if min_bytes is not None or max_bytes is not None:
        if sizes is not None or min_bytes is None or max_bytes is None:
            raise UsageError("give either --sizes or both --min-bytes and --max-bytes")
        sizes_bytes = sweep_sizes(size_option(min_bytes), size_option(max_bytes), factor)
    else:
        sizes_bytes = [size_option(s) for s in (sizes or DEFAULT_SIZES).split(",") if s.strip()]
    names, c_named = split_names(strategies)
    plan = BenchPlan(strategies=names, sizes_bytes=tuple(sizes_bytes), dtype=dtype, in_place=in_place,
                     warmup=warmup, iterations=iterations, rounds=rounds, seed=seed,
                     c_floor="on" if c_named and c_baseline == "auto" else c_baseline, model=model,
                     calibration=calibration,
                     options={"bucket_bytes": size_option(bucket_bytes), "ps_shards": ps_shards})
    validate(plan)
    if seed < 0 or ps_shards < 0 or size_option(bucket_bytes) < 4:
        raise UsageError("--seed and --ps-shards must be 0 or positive, --bucket-bytes at least 4")
    request = out_request(kw, "bench", seed)  # bad input fails before any folder is made
    sys.exit(_guarded(lambda: bench_command(plan, device, shared_out(request))))


@main.command()
@click.argument("run_a", metavar="A", type=click.Path())
@click.argument("run_b", metavar="B", type=click.Path())
@click.option("--threshold", type=float, default=0.2, show_default=True,
              help="a regression is B slower than A by more than this fraction, beyond both runs' spread")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="also write the table as CSV here")
def compare(run_a, run_b, threshold, out):
    """Two bench runs side by side (bench.csv files or run folders; no MPI).

    Per strategy x ranks x size: B's time over A's, and whether the difference
    exceeds the spread over rounds measured in both runs. Exit 1 when any row
    regressed beyond --threshold and beyond that spread, 0 otherwise, 2 for
    bad input.
    """
    from mpibench.results.runcompare import compare_command

    sys.exit(compare_command(run_a, run_b, threshold, out))


@main.command()
@click.option("--seeds", type=int, default=10, show_default=True,
              help="seeds; each gives a case per worker count and strategy (--swarm: per worker count)")
@click.option("--workers", default="2,3,5,8", show_default=True, help="worker counts, comma-separated")
@click.option("--strategies", default=None,
              help="strategies, comma-separated [default: every checked strategy, see 'strategies'; "
                   "with --swarm every registered one]")
@click.option("--steps", type=int, default=10, show_default=True, help="training steps per case")
@click.option("--jobs", type=int, default=1, show_default=True, help="launches run at the same time")
@click.option("--swarm", is_flag=True,
              help="each case draws strategy, recovery, bucket bytes, PS shards, batch size, samples and "
                   "check interval from its seed (one case per seed and worker count)")
@click.option("--cases-per-launch", type=int, default=12, show_default=True,
              help="cases run one after another in one mpirun job (1: one job per case)")
@click.option("--time-budget", type=float, default=None, metavar="MINUTES",
              help="keep drawing seeds until this many minutes have passed (--seeds is then ignored)")
@_with_options(out_options("sweep.csv, findings.csv, sweep.json and one folder per case"))
@click.option("--mpiexec", default=None,
              help="launcher for the cases [default: $MPIBENCH_MPIEXEC, else this Python's mpirun with the "
                   "flags 'make run' uses]")
@click.option("--first-seed", type=int, default=0, show_default=True, help="seeds run from here")
@click.option("--case-deadline", type=float, default=180.0, show_default=True,
              help="seconds a launch may go without finishing a case before it is killed and "
                   "the case recorded as hung")
@click.option("--shrink-runs", type=int, default=30, show_default=True,
              help="most jobs spent shrinking each violating case (0: no shrinking)")
@click.option("--mutant", default=None, hidden=True, help="self-test only: every case runs this mutant")
def sweep(seeds, workers, strategies, steps, jobs, mpiexec, first_seed, case_deadline, shrink_runs,
          mutant, swarm, cases_per_launch, time_budget, **kw):
    """Random fault schedules over seeds x workers x strategies (launches its own jobs).

    Cases of one worker count run many per mpirun job, the world size restored
    between them; each case still writes its own folder, and sweep.csv gets one
    row per case with its violations and the exact 'run' command that replays
    it alone. A job that dies is a finding in the case it died in; the cases it
    had not reached run again in a new job. Exit 0 when every case held every
    invariant, 1 otherwise.
    """
    from mpibench.drive.launch import LaunchError, preflight, stop_on_sigterm
    from mpibench.job.outdir import OutDirError, resolve
    from mpibench.drive.sweep import parse_list, sweep_command

    if seeds < 1 or steps < 1 or jobs < 1 or cases_per_launch < 1 or first_seed < 0 or shrink_runs < 0:
        raise UsageError("--seeds, --steps, --jobs and --cases-per-launch must be positive, --first-seed "
                         "and --shrink-runs 0 or positive")
    if time_budget is not None and not 0 < time_budget < float("inf"):
        raise UsageError(f"--time-budget must be a positive number of minutes, got {time_budget}")
    if not math.isfinite(case_deadline) or case_deadline <= 0:
        raise UsageError(f"--case-deadline must be a positive number of seconds, got {case_deadline}")
    worker_counts = parse_list(workers, "--workers", int)
    if min(worker_counts) < 1:
        raise UsageError("--workers must be positive")
    from .job.swarm import registered_strategies
    from .sync.registry import CHECKED, validate

    if strategies is None:
        strategies = ",".join(registered_strategies() if swarm else CHECKED)
    validate(parse_list(strategies, "--strategies"))
    request = out_request(kw, "sweep", first_seed)
    stop_on_sigterm()  # a scheduler's SIGTERM ends the trial job and the cases, not just this process
    try:
        preflight(mpiexec, max(worker_counts))
    except LaunchError as exc:
        click.echo(f"mpibench: could not run: {exc}", err=True)
        sys.exit(EXIT_COULD_NOT_RUN)
    try:
        out = resolve(request)
    except OutDirError as exc:
        raise UsageError(str(exc)) from None
    extra = ("--mutant", mutant) if mutant else ()
    sys.exit(sweep_command(seeds, workers, strategies, steps, jobs, out, mpiexec, first_seed,
                           case_deadline, shrink_runs, extra, swarm, cases_per_launch, time_budget))


@main.command()
@click.option("--jobs", type=int, default=2, show_default=True, help="jobs run at the same time")
@click.option("--out", type=click.Path(file_okay=False), default="mpibench-selftest", show_default=True,
              help="output folder: one folder per job")
@click.option("--mpiexec", default=None,
              help="launcher for the jobs [default: $MPIBENCH_MPIEXEC, else this Python's mpirun with the "
                   "flags 'make run' uses]")
@click.option("--strategy", default=None,
              help="instead: check this strategy (name or package.module:Class) on uneven shards "
                   "under every fault the self-test uses; exit 0 only if it holds every invariant")
def selftest(jobs, out, mpiexec, strategy):
    """The checker against known-bad reductions; exit 0 only if every one is caught.

    Prints, for each mutant, the invariant and step that caught it, and shows
    that with equal batch sizes the weighting mutants cannot be told apart.
    With --strategy, checks one strategy instead and names the invariant and
    step of anything it gets wrong.
    Exit 3 (could not run) when the launcher cannot start the jobs.
    """
    from pathlib import Path

    from mpibench.drive.launch import LaunchError, launcher_argv, preflight
    from mpibench.drive.selftest import WORKERS, run_selftest

    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if strategy is not None:
        from .sync.registry import validate

        validate([strategy])
    try:
        preflight(mpiexec, WORKERS)
    except LaunchError as exc:
        click.echo(f"mpibench: could not run: {exc}", err=True)
        sys.exit(EXIT_COULD_NOT_RUN)
    sys.exit(run_selftest(Path(out), launcher_argv(mpiexec), jobs, strategy=strategy))


@main.command()
def strategies():
    """The sync strategies on offer (built-in and installed plugins), one line each.

    \b
    A strategy of your own: subclass mpibench.sync.base.SyncStrategy, implement
    reduce(buf), and either pass --strategy package.module:Class or register it
    under the entry-point group 'mpibench.strategies'. Check it with
    'python -m mpibench selftest --strategy NAME'.
    """
    from .sync.registry import listing

    for line in listing():
        click.echo(line)


@main.command()
def scenarios():
    """The named fault scenarios, one line each."""
    from mpibench.faults.scenarios import describe

    for line in describe():
        click.echo(line)


def parse_run_args(args: list[str]) -> tuple[RunConfig, str, str | None]:
    """A ``run`` argument list (``run`` first) read exactly as ``run`` reads it:
    (config, --out, --mutant)."""
    if not args or args[0] != "run":
        raise UsageError(f"not a run command: {' '.join(args)!r}")
    try:
        params = dict(run.make_context("run", list(args[1:])).params)
    except click.ClickException as exc:
        raise UsageError(f"bad run arguments {' '.join(args)!r}: {exc.format_message()}") from None
    mutant, out = params.pop("mutant"), params["out"]
    return config_from(params.pop("strategy"), params.pop("scenario"), **params), out, mutant


@main.command(name="batch", hidden=True)
@click.argument("plan_file", metavar="PLAN")
def batch(plan_file):
    """Internal: a sweep's cases one after another in one launch (under mpirun; see mpibench.job.batch)."""
    from .job.batch import batch_job, read_plan

    def body() -> int:
        parsed = [parse_run_args(list(c.args)) for c in read_plan(plan_file)]
        mutants = {m for _, _, m in parsed}
        if len(mutants) > 1:
            raise UsageError("the cases of a batch must share one --mutant")
        mutant = mutants.pop()
        if mutant is not None:
            from .job.mutants import install

            try:
                install(mutant)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        return batch_job([c for c, _, _ in parsed], [o for _, o, _ in parsed])

    sys.exit(_guarded(body))


@main.command(name="_replacement", hidden=True)
def replacement():
    """Internal: a replacement worker spawned by the survivors (--recovery respawn)."""
    from mpibench.faults.respawn import replacement_main

    from .job.suite import replacement_entry

    sys.exit(_guarded(lambda: replacement_main(replacement_entry)))


@main.command()
@click.argument("out_dir", metavar="DIR", type=click.Path(file_okay=False))
def check(out_dir):
    """Judge a run folder from its history alone (no MPI); write verdict.json and invariants.csv.

    Reads DIR/run.json and DIR/history/, rebuilds data, shards and epoch orders
    from the seed, and checks the six invariants. Exit status: 0 pass, 1 a
    violation (printed with step, invariant and replay command), 3 cannot judge
    (no run.json, no history, a worker's file missing or cut short without a
    scheduled kill), 2 bad usage.
    """
    from .check.command import check_command

    sys.exit(check_command(out_dir))


@main.command()
@click.argument("out_dir", metavar="DIR", type=click.Path(file_okay=False))
def report(out_dir):
    """(Re)build DIR/report.html from the CSVs and run.json in DIR (no MPI needed).

    Exit 2 when DIR holds no results or a file there cannot be read.
    """
    from mpibench.results.inputs import ReportInputError
    from mpibench.results.report import build

    if not os.path.isdir(out_dir):
        raise UsageError(f"no such folder: {out_dir}")
    try:
        path = build(out_dir, progress=lambda text: click.echo(f"report: {text}", err=True))
    except ReportInputError as exc:
        raise UsageError(str(exc)) from None
    click.echo(f"wrote {path}")


def shared_out(request) -> str:
    """The request resolved once for the whole job (rank 0 creates the folder, the others learn it)."""
    from mpi4py import MPI

    from mpibench.job.outdir import resolve_on

    return resolve_on(MPI.COMM_WORLD, request, UsageError)[0]


def _guarded(body) -> int:
    """Run a job body: bad input exits 2 on every rank, a crash aborts the job."""
    try:
        code = body()
    except UsageError as exc:
        fail_usage(str(exc))
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - any crash must end all ranks
        abort_job(exc)
        return EXIT_VIOLATION
    from mpibench.faults.ulfm import exit_process

    exit_process(code)  # after a failure or a revoke, leave without MPI_Finalize (it can hang)
    return code
