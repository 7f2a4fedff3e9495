"""The ``mpibench`` command group; called without a command it is the main job."""
from __future__ import annotations

import sys

import click

from mpibench.base.config import UsageError

from . import driver_commands, job_commands, offline_commands
from .options import config_from, out_request, run_options
from .usage import fail_usage, guarded


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
    scenario under ring, PS and auto with identical schedules (MPIBENCH_STRATEGIES
    picks other checked strategies), then the collective
    benchmarks; CSVs, run.json and report.html go to --out, and a summary table
    is printed. Exit status (from the checker's verdict.json): 0 all invariants
    held, 1 a violation (the message names step, invariant and the replay
    command), 2 bad usage or input, 3 the run cannot be judged (its history is
    incomplete or a planned phase never finished), 4 a partial pass (planned cases
    the launch could not support were not run; each is named). The verdict comes
    first, then report.html is built from the judged folder.

    \b
    Example:  mpirun -n 8 --oversubscribe --with-ft ulfm --prtemca state_base_recoverable 1 \\
              python -m mpibench --out results
    """
    if ctx.invoked_subcommand is not None:
        return
    config = config_from("native", "none", **kw)
    request = out_request(kw, "main", config.seed)
    from mpibench.drive.jobsweep import plan_job_sweep
    from mpibench.job.suite import main_job

    def plan_sweep(base, world, out):
        return plan_job_sweep(base, world, out, job_commands.parse_run_args)

    sys.exit(guarded(lambda: main_job(config, request, plan_sweep)))


for _command in (job_commands.run, job_commands.bench, job_commands.batch, job_commands.replacement,
                 driver_commands.sweep, driver_commands.selftest,
                 offline_commands.check, offline_commands.report, offline_commands.compare,
                 offline_commands.strategies, offline_commands.scenarios):
    main.add_command(_command)
