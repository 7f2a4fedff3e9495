"""Command line: ``python -m mpibench [COMMAND]`` (see ``--help``).

Exit status: 0 when every invariant held, 1 when one was violated or a run
could not go on, 2 for bad usage or bad input (one line, no traceback).
"""
from __future__ import annotations

import os
import sys
import traceback

import click

from .config import RunConfig, UsageError

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2


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


def fail_usage(message: str):
    say(f"mpibench: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def abort_job(exc: BaseException) -> None:
    """An unhandled exception on any rank ends the whole job with a message."""
    from mpi4py import MPI

    from .runinfo import this_host

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
    if value < 0 or value != int(value):
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
        click.option("--device", type=click.Choice(["cpu", "gpu", "auto"]), default=d.device,
                     show_default=True, help="where gradient buffers live and are reduced"),
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
        click.option("--out", type=click.Path(file_okay=False), default="mpibench-out", show_default=True,
                     help="output folder for CSVs, run.json and report.html"),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def config_from(strategy: str, scenario: str, **kw) -> RunConfig:
    kw["bucket_bytes"] = size_option(str(kw["bucket_bytes"]))
    kw.pop("out", None)
    return RunConfig(strategy=strategy, scenario=scenario, **kw)


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
    is printed. Exit status: 0 all invariants held, 1 a violation (the message
    names step, invariant and the replay command), 2 bad usage or input.

    \b
    Example:  mpirun -n 8 --oversubscribe --with-ft ulfm --prtemca state_base_recoverable 1 \
              python -m mpibench --out results
    """
    if ctx.invoked_subcommand is not None:
        return
    from .suite import main_job

    out = kw["out"]
    config = config_from("native", "none", **kw)
    sys.exit(_guarded(lambda: main_job(config, out)))


@main.command()
@click.option("--strategy", default="native", show_default=True, help="ring, ps or native")
@click.option("--scenario", default="none", show_default=True,
              help="a named scenario (see 'scenarios') or a TOML schedule file")
@click.option("--mutant", default=None, hidden=True,
              help="self-test only: run a known-bad reduction (see mpibench.mutants)")
@run_options
def run(strategy, scenario, mutant, **kw):
    """One scenario under one strategy (under mpirun)."""
    from .suite import single_run

    if mutant is not None:
        from .mutants import install

        try:
            install(mutant)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    out = kw["out"]
    config = config_from(strategy, scenario, **kw)
    sys.exit(_guarded(lambda: single_run(config, out)))


@main.command()
@click.option("--sizes", default="4K,1M,16M", show_default=True,
              help="message sizes, comma-separated (4K, 1M, 16MiB, 512)")
@click.option("--strategies", default="ring,ps,native", show_default=True, help="strategies, comma-separated")
@click.option("--iterations", type=int, default=20, show_default=True, help="timed calls per size")
@click.option("--warmup", type=int, default=5, show_default=True, help="untimed calls before them")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the input values")
@click.option("--bucket-bytes", default="1M", show_default=True, help="ring all-reduce bucket cap")
@click.option("--ps-shards", type=int, default=0, show_default=True,
              help="parameter-server shards (0: one per rank)")
@click.option("--device", type=click.Choice(["cpu", "gpu", "auto"]), default="cpu", show_default=True,
              help="where the buffers live and are reduced")
@click.option("--out", type=click.Path(file_okay=False), default="mpibench-out", show_default=True,
              help="output folder for bench.csv")
def bench(sizes, strategies, iterations, warmup, seed, bucket_bytes, ps_shards, device, out):
    """Collective microbenchmarks (under mpirun): time, bandwidth and a result check per size.

    busbw = algbw * 2(p-1)/p as in nccl-tests; exit 1 if any reduction was wrong.
    """
    from .bench import bench_command

    sizes_bytes = [size_option(s) for s in sizes.split(",") if s.strip()]
    sys.exit(_guarded(lambda: bench_command(sizes_bytes, strategies, iterations, warmup, seed,
                                            size_option(bucket_bytes), ps_shards, device, out)))


@main.command()
@click.option("--seeds", type=int, default=10, show_default=True,
              help="seeds; each gives a case per worker count and strategy (--swarm: per worker count)")
@click.option("--workers", default="2,3,5,8", show_default=True, help="worker counts, comma-separated")
@click.option("--strategies", default=None,
              help="strategies, comma-separated [default: ring,ps; with --swarm every registered one]")
@click.option("--steps", type=int, default=10, show_default=True, help="training steps per case")
@click.option("--jobs", type=int, default=1, show_default=True, help="launches run at the same time")
@click.option("--swarm", is_flag=True,
              help="each case draws strategy, recovery, bucket bytes, PS shards, batch size, samples and "
                   "check interval from its seed (one case per seed and worker count)")
@click.option("--cases-per-launch", type=int, default=12, show_default=True,
              help="cases run one after another in one mpirun job (1: one job per case)")
@click.option("--time-budget", type=float, default=None, metavar="MINUTES",
              help="keep drawing seeds until this many minutes have passed (--seeds is then ignored)")
@click.option("--out", type=click.Path(file_okay=False), default="mpibench-sweep", show_default=True,
              help="output folder: sweep.csv, findings.csv, one folder per case")
@click.option("--mpiexec", default=None,
              help="launcher for the cases [default: $MPIBENCH_MPIEXEC, else mpirun]")
@click.option("--first-seed", type=int, default=0, show_default=True, help="seeds run from here")
@click.option("--case-deadline", type=float, default=180.0, show_default=True,
              help="seconds a launch may go without finishing a case before it is killed and "
                   "the case recorded as hung")
@click.option("--shrink-runs", type=int, default=30, show_default=True,
              help="most jobs spent shrinking each violating case (0: no shrinking)")
@click.option("--mutant", default=None, hidden=True, help="self-test only: every case runs this mutant")
def sweep(seeds, workers, strategies, steps, jobs, out, mpiexec, first_seed, case_deadline, shrink_runs,
          mutant, swarm, cases_per_launch, time_budget):
    """Random fault schedules over seeds x workers x strategies (launches its own jobs).

    Cases of one worker count run many per mpirun job, the world size restored
    between them; each case still writes its own folder, and sweep.csv gets one
    row per case with its violations and the exact 'run' command that replays
    it alone. A job that dies is a finding in the case it died in; the cases it
    had not reached run again in a new job. Exit 0 when every case held every
    invariant, 1 otherwise.
    """
    from .sweep import sweep_command

    extra = ("--mutant", mutant) if mutant else ()
    sys.exit(sweep_command(seeds, workers, strategies, steps, jobs, out, mpiexec, first_seed,
                           case_deadline, shrink_runs, extra, swarm, cases_per_launch, time_budget))


@main.command()
@click.option("--jobs", type=int, default=2, show_default=True, help="jobs run at the same time")
@click.option("--out", type=click.Path(file_okay=False), default="mpibench-selftest", show_default=True,
              help="output folder: one folder per job")
@click.option("--mpiexec", default=None,
              help="launcher for the jobs [default: $MPIBENCH_MPIEXEC, else mpirun]")
def selftest(jobs, out, mpiexec):
    """The checker against known-bad reductions; exit 0 only if every one is caught.

    Prints, for each mutant, the invariant and step that caught it, and shows
    that with equal batch sizes the weighting mutants cannot be told apart.
    """
    from pathlib import Path

    from .launch import launcher_argv
    from .selftest import run_selftest

    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    sys.exit(run_selftest(Path(out), launcher_argv(mpiexec), jobs))


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
    """Internal: a sweep's cases one after another in one launch (under mpirun; see mpibench.batch)."""
    from .batch import batch_job, read_plan

    def body() -> int:
        parsed = [parse_run_args(list(c.args)) for c in read_plan(plan_file)]
        mutants = {m for _, _, m in parsed}
        if len(mutants) > 1:
            raise UsageError("the cases of a batch must share one --mutant")
        mutant = mutants.pop()
        if mutant is not None:
            from .mutants import install

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

    sys.exit(_guarded(replacement_main))


@main.command()
@click.argument("out_dir", metavar="DIR", type=click.Path(file_okay=False))
def report(out_dir):
    """(Re)build DIR/report.html from the CSVs and run.json in DIR (no MPI needed)."""
    from mpibench.results.report import build

    if not os.path.isdir(out_dir):
        raise UsageError(f"no such folder: {out_dir}")
    click.echo(f"wrote {build(out_dir)}")


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
