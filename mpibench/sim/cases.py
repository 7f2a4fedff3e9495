"""One sweep or self-test case on the simulated engine, judged exactly as a real one.

A :class:`~mpibench.drive.cases.Case` is what the drivers launch as
``mpirun -n W python -m mpibench run ...``. Here its ``run`` arguments are read
into the same :class:`~mpibench.base.config.RunConfig`, the same job runs on W
simulated processes in this Python process (no launch: that is where the
speed comes from), and the drivers' own :func:`~mpibench.drive.cases.judge`
turns the folder's verdict and the job's exit status into the same
:class:`~mpibench.drive.cases.Outcome` (sweep.csv row, replay command) a real
case gets. The replay command replays the case on the simulated engine; the
real-MPI one is the same ``run`` arguments under ``mpirun``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import shlex
import sys
import time
from pathlib import Path

from mpibench.base.config import RunConfig, UsageError
from mpibench.base.numeric_env import env_prefix
from mpibench.base.parsing import parse_size
from mpibench.drive.cases import Case, Outcome, judge, write_case
from mpibench.drive.launch import JobResult

from .jobs import SimSettings, simulate_run

# The run options a case's arguments may carry, and the config field each sets.
_FIELDS = {"--strategy": ("strategy", str), "--scenario": ("scenario", str), "--steps": ("steps", int),
           "--seed": ("seed", int), "--recovery": ("recovery", str), "--samples": ("samples", int),
           "--batch-size": ("batch_size", int), "--check-every": ("check_every", int),
           "--bucket-bytes": ("bucket_bytes", lambda t: parse_size(t)), "--ps-shards": ("ps_shards", int),
           "--straggler-deadline": ("straggler_deadline", float), "--deadline-s": ("deadline_s", float),
           "--lr": ("lr", float), "--features": ("features", int), "--hidden": ("hidden", int),
           "--classes": ("classes", int), "--device": ("device", str), "--momentum": ("momentum", float),
           "--optimizer": ("optimizer", str), "--beta1": ("beta1", float), "--beta2": ("beta2", float),
           "--adam-eps": ("adam_eps", float), "--weight-decay": ("weight_decay", float),
           "--run-parts": ("run_parts", str)}
_FLAGS = {"--overlap": "overlap"}  # the run options that stand alone (True when given)
TAIL_CHARS = 4000


def config_of(args: list[str]) -> tuple[RunConfig, str | None]:
    """(config, --out) from ``run`` arguments as the drivers write them."""
    if not args or args[0] != "run":
        raise UsageError(f"not a run command: {shlex.join(args)}")
    fields, out = {name: True for flag, name in _FLAGS.items() if flag in args[1:]}, None
    pairs = [a for a in args[1:] if a not in _FLAGS]
    if len(pairs) % 2:
        raise UsageError(f"run arguments must come in option/value pairs (and flags): {shlex.join(args)}")
    for flag, value in zip(pairs[::2], pairs[1::2]):
        if flag == "--out":
            out = value
        elif flag in _FIELDS:
            name, kind = _FIELDS[flag]
            try:
                fields[name] = kind(value)
            except ValueError:
                raise UsageError(f"bad value for {flag}: {value!r}") from None
        else:
            raise UsageError(f"the simulated engine does not take {flag} in a case")
    config = RunConfig(**fields)
    config.check_values()
    return config, out


def sim_replay(case: Case, folder: Path, out_name: str = "replay") -> str:
    args = case.run_args(folder / "schedule.toml", folder / out_name)
    return shlex.join([*env_prefix(with_mpi=False), sys.executable, "-m", "mpibench", *args[:1], "--engine", "sim", "--ranks",
                       str(case.workers), *args[1:]])


def run_case_sim(case: Case, folder: Path, settings: SimSettings = SimSettings(),
                 deadline_s: float = 180.0) -> Outcome:
    """Run ``case`` simulated in ``folder`` and judge it as the drivers judge a real case; a case
    that takes more than ``deadline_s`` of wall time is ended and judged hung."""
    from .process import install

    install()
    schedule_path = write_case(case, folder)
    out_dir = folder / "run"
    config, _ = config_of(case.run_args(schedule_path, out_dir))
    stdout, stderr = io.StringIO(), io.StringIO()
    settings = dataclasses.replace(settings, wall_limit_s=deadline_s)  # a case never holds the sweep
    start = time.perf_counter()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status, result = simulate_run(config, str(out_dir), case.workers, settings, quiet=True)
    wall_s = time.perf_counter() - start
    job = JobResult(None if result.deadlocked else status, wall_s, deadline_s,
                    stdout.getvalue()[-TAIL_CHARS:], stderr.getvalue()[-TAIL_CHARS:])
    return judge(case, out_dir, job, sim_replay(case, folder))
