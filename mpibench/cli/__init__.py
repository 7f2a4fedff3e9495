"""Command line: ``python -m mpibench [COMMAND]`` (see ``--help``).

Exit status: 0 when every invariant held, 1 when one was violated or a run
could not go on, 2 for bad usage or bad input (one line, no traceback), 3 when
the checker cannot judge the run (history missing or incomplete).

One thin click command per subcommand, each only parsing options and handing
over to the layer below:

* :mod:`.usage` -- exit statuses, the one-line error, a crash aborting the job;
* :mod:`.options` -- the options ``run`` and the main job share, ``--out``;
* :mod:`.job_commands` -- what runs under ``mpirun``: ``run``, ``bench`` and
  the internal ``batch`` and ``_replacement``;
* :mod:`.driver_commands` -- what launches its own jobs: ``sweep``, ``selftest``;
* :mod:`.offline_commands` -- what only reads files: ``check``, ``report``,
  ``compare``, ``strategies``, ``scenarios``;
* :mod:`.group` -- the group itself, whose bare call is the main job.
"""
from .group import main

__all__ = ["main"]
