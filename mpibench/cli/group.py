"""The ``mpibench`` command group; called without a command it is the main job."""
from __future__ import annotations

import sys

import click

from mpibench import __version__
from mpibench.base.config import UsageError

from . import driver_commands, job_commands, offline_commands
from .parse_only import parse_arguments_only, parse_only_requested
from mpibench.sync.registry import BASELINE

from .options import config_from, engine_options, out_request, run_options
from .selflaunch import DEFAULT_RANKS, launch_main_job, under_launcher
from .usage import fail_usage, guarded, launched_size


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

    def invoke(self, ctx):
        if parse_only_requested():
            parse_arguments_only(self, ctx)
        return super().invoke(ctx)


@click.group(cls=Cli, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(version=__version__, prog_name="mpibench", message="%(prog)s %(version)s")
@engine_options
@run_options
@click.option("--np", "np_ranks", type=click.IntRange(min=1), default=None,
              help=f"ranks to start when run without a launcher [default: {DEFAULT_RANKS}]; "
                   "under mpirun its -n decides")
@click.pass_context
def main(ctx, engine, ranks, np_ranks, platform, **kw):
    """MPI benchmark and correctness suite for data-parallel gradient sync.

    Without a command this is the main job: every named fault scenario under
    ring, PS and auto with identical schedules (MPIBENCH_STRATEGIES picks other
    checked strategies), then the collective benchmarks; CSVs, run.json and
    report.html go to --out, and a summary table is printed. Before the first
    case it probes what the launch supports (fault tolerance, spawning, free
    slots, each host's CPUs); cases it cannot run are left out and named, with
    the launcher flags that would run them. Started without mpirun, it runs
    itself under the launcher beside this Python (MPIBENCH_MPIEXEC overrides)
    on --np ranks and says what it started. Exit status (from the checker's
    verdict.json): 0 all invariants held, 1 a violation (the message names
    step, invariant and the replay command), 2 bad usage or input, 3 could not
    run or the history cannot be judged (or a planned phase never finished), 4 everything that ran passed but some
    planned cases were not run (this launch cannot support them). The verdict
    comes first, then report.html is built from the judged folder.

    \b
    Example:  mpirun -n 8 --oversubscribe --with-ft ulfm --prtemca state_base_recoverable 1 \\
              python -m mpibench --out results
    """
    if ctx.invoked_subcommand is not None:
        return
    if engine == "sim":
        from mpibench.sim.cli_entry import simulated_main_job

        sys.exit(simulated_main_job(lambda: config_from(BASELINE, "none", **kw),
                                    lambda c: out_request(kw, "main", c.seed), ranks, platform,
                                    job_commands.parse_run_args))
    config = config_from(BASELINE, "none", **kw)
    request = out_request(kw, "main", config.seed)
    if not under_launcher():
        sys.exit(launch_main_job(np_ranks, sys.argv[1:]))
    if np_ranks is not None and np_ranks != launched_size():
        raise UsageError(f"--np {np_ranks} is for a start without a launcher; this launch started "
                         f"{launched_size()} rank(s) (its -n decides)")
    from mpibench.drive.jobsweep import plan_job_sweep
    from mpibench.job.suite import main_job

    def plan_sweep(base, world, out):
        return plan_job_sweep(base, world, out, job_commands.parse_run_args)

    sys.exit(guarded(lambda: main_job(config, request, plan_sweep)))


for _command in (job_commands.run, job_commands.bench, job_commands.batch, job_commands.replacement,
                 driver_commands.sweep, driver_commands.selftest, driver_commands.predict,
                 offline_commands.check, offline_commands.report, offline_commands.compare,
                 offline_commands.strategies, offline_commands.scenarios):
    main.add_command(_command)
