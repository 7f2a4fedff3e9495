"""The self-test's known-bad variants (job layer): each plants one deliberate mistake in the
strategies, the worker loop, the recovery or the records, and the checker must catch it.
The catalogue (:mod:`.catalogue`) lists them; :mod:`.build` turns a name into the run's parts."""

# This module is the run-parts plugin for the variants: ``run --run-parts
# mpibench.selftest.variants:NAME`` calls run_parts(NAME, config) (mpibench.job.parts.parts_for).
HOOK_MODULE = __name__


def hook(name: str) -> str:
    """The ``--run-parts`` value that plants variant ``name``."""
    return f"{HOOK_MODULE}:{name}"


def run_parts(name: str, config):
    """The run's parts with variant ``name`` planted (ValueError: no such variant). Imported
    late: the drivers read the catalogue without loading the strategies or MPI."""
    from .build import parts

    return parts(name, config)
