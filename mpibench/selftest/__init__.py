"""The self-test: known-bad variants of the production code, and the drivers that show the
checker catches every one of them on both engines.

* :mod:`.variants` (job layer): one record per variant in :mod:`.variants.catalogue` (its
  name, the mistake it makes, the invariant that must catch it, the engines it runs on)
  and the code that plants the mistake (:mod:`.variants.build` and the modules beside it).
  A variant reaches production only through the public run-parts hook: ``run --run-parts
  mpibench.selftest.variants:NAME`` (:mod:`mpibench.job.runner`, :class:`~mpibench.job.parts.RunParts`).
* :mod:`.drive` (drive layer): ``python -m mpibench selftest``, one MPI job per trial;
* :mod:`.sim` (beside the drivers): the same trials on the simulated engine.

Nothing here is imported by production code; production code names no variant.
"""

# ``python -m mpibench selftest --help`` (mpibench/cli/driver_commands.py shows it).
COMMAND_HELP = """The checker against known-bad reductions; exit 0 only if every one is caught.

    Prints, for each mutant, the invariant and step that caught it, and shows
    that with equal batch sizes the weighting mutants cannot be told apart.
    With --strategy, checks one strategy instead: for each planted fault it
    says "survived", or which invariant failed at which step, with the
    command that replays that job (docs/strategy-api.md).
    Exit 3 (could not run) when the launcher cannot start the jobs.
    """
