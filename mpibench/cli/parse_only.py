"""``MPIBENCH_PARSE_ONLY=1``: check a command line's arguments and stop before any work.

The manual's long commands (a sweep, a Slurm job, the main job on 8 ranks) cannot run
in a test, but a renamed or mistyped option in them must still fail one. With this
variable set, the command line is parsed exactly as a run would parse it (the group's
options, the command's name, its options and their types) and the process exits 0
without importing MPI, writing a file or launching anything. A bad argument fails as
it always does: one line and exit 2.
"""
from __future__ import annotations

import os

import click

PARSE_ONLY_VARIABLE = "MPIBENCH_PARSE_ONLY"


def parse_only_requested() -> bool:
    return os.environ.get(PARSE_ONLY_VARIABLE, "") not in ("", "0")


def parse_arguments_only(group: click.Group, ctx: click.Context) -> None:
    """Parse the subcommand's arguments (the group's are parsed already), then exit 0."""
    # click keeps the command name and its arguments here until it invokes the command
    args = [*getattr(ctx, "_protected_args", []), *ctx.args]
    what = "the main job"
    if args:
        name, command, rest = group.resolve_command(ctx, args)
        command.make_context(name, rest, parent=ctx)
        what = f"'{name}'"
    click.echo(f"{PARSE_ONLY_VARIABLE}: the arguments of {what} parse; nothing was run", err=True)
    raise click.exceptions.Exit(0)
