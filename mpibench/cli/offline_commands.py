"""The commands that only read files or print what is on offer (no MPI):
``check``, ``report``, ``compare``, ``strategies``, ``scenarios``."""
from __future__ import annotations

import os
import sys

import click

from mpibench.base.config import UsageError


@click.command()
@click.argument("out_dir", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--confirm", is_flag=True, help="after a job that printed its verdict: print the verdict "
              "line again only if this judgement differs from the job's verdict.json")
def check(out_dir, confirm):
    """Judge a run folder from its history alone (no MPI); write verdict.json and invariants.csv.

    Reads DIR/run.json and DIR/history/, rebuilds data, shards and epoch orders
    from the seed, and checks the six invariants. Exit status: 0 pass, 1 a
    violation (printed with step, invariant and replay command), 3 cannot judge
    (no run.json, no history, a worker's file missing or cut short without a
    scheduled kill, a planned phase that never finished: each named), 4 partial
    (everything that ran passed; planned phases the launch could not run are
    named with what they need), 2 bad usage.
    """
    from mpibench.check.command import check_command

    sys.exit(check_command(out_dir, confirm=confirm))


@click.command()
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
    _page_phase_done(out_dir)
    click.echo(f"wrote {os.path.abspath(path)}")


def _page_phase_done(out_dir: str) -> None:
    """A run that planned its page (run.json ``phases``) has it now: the phase is accounted for."""
    import json

    from mpibench.base.plan import mark_finished

    try:
        with open(os.path.join(out_dir, "run.json")) as fh:
            planned = json.load(fh).get("phases") or []
    except (OSError, ValueError, AttributeError):
        return
    if "report" in planned:
        mark_finished(out_dir, "report")


@click.command()
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
    bad input. Runs whose recorded machines differ (CPU, MPI library, OS,
    Python, hosts) are compared all the same, with one line naming what
    differs, and the exit status stays as above: an MPI library change is
    one of the things compare is for.
    """
    from mpibench.results.runcompare import compare_command

    sys.exit(compare_command(run_a, run_b, threshold, out))


@click.command()
def strategies():
    """The sync strategies on offer (built-in and installed plugins), one line each.

    \b
    A strategy of your own: subclass mpibench.sync.base.SyncStrategy, implement
    reduce(buf), and either pass --strategy package.module:Class or register it
    under the entry-point group 'mpibench.strategies'. Check it with
    'python -m mpibench selftest --strategy NAME'.
    """
    from mpibench.sync.registry import listing

    for line in listing():
        click.echo(line)


@click.command()
def scenarios():
    """The named fault scenarios, one line each."""
    from mpibench.faults.scenarios import describe

    for line in describe():
        click.echo(line)
