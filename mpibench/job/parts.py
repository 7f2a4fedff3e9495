"""The one public hook through which outside code changes how a run trains, recovers or
records: a run-parts plugin, named by ``run --run-parts MODULE:NAME``."""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from mpibench.base.config import RunConfig, UsageError
from mpibench.engine.worker import Trainer


@dataclass(frozen=True)
class RunParts:
    """The classes a run is built from: the one public hook through which outside code
    changes how a run trains, recovers or records (beside strategy plugins, which change
    only the sync). A run takes them from a run-parts plugin named by ``run --run-parts
    MODULE:NAME`` (:func:`parts_for`); the self-test's known-bad variants
    (:mod:`mpibench.selftest.variants`) reach a run only this way.

    ``trainer``: a :class:`~mpibench.engine.worker.Trainer` subclass (its extension points
    are listed there); ``recovery``: a :class:`~mpibench.faults.recovery.FaultRecovery`
    subclass (None: that class); ``refuse``: False runs a schedule that
    :func:`mpibench.job.runner.check_supported` would refuse (optimizer state no survivor
    holds), to show what the checker makes of it.
    """

    trainer: type = Trainer
    recovery: type | None = None  # None: mpibench.faults.recovery.FaultRecovery
    refuse: bool = True


PARTS_FUNCTION = "run_parts"  # what a run-parts plugin module defines: run_parts(name, config) -> RunParts


def parts_for(config: RunConfig) -> RunParts:
    """The parts ``config``'s runs are built from: ``config.run_parts`` names a module and a
    name (``MODULE:NAME``); the module's ``run_parts(NAME, config)`` returns the
    :class:`RunParts` (a ValueError from it: the name is unknown). '' is the production
    parts. Bad input is a UsageError (one line, exit 2)."""
    spec = config.run_parts
    if not spec:
        return RunParts()
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name:
        raise UsageError(f"--run-parts must be MODULE:NAME, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"--run-parts {spec}: cannot import {module_name}: {exc}") from None
    build = getattr(module, PARTS_FUNCTION, None)
    if not callable(build):
        raise UsageError(f"--run-parts {spec}: {module_name} defines no {PARTS_FUNCTION}(name, config)")
    try:
        parts = build(name, config)
    except ValueError as exc:
        raise UsageError(f"--run-parts {spec}: {exc}") from None
    if not isinstance(parts, RunParts):
        raise UsageError(f"--run-parts {spec}: {PARTS_FUNCTION} returned {type(parts).__name__}, not RunParts")
    return parts
