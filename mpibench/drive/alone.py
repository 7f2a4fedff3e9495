"""Every finding of a batch is run again alone before it is reported.

A case in a batch runs on a world the earlier cases of the launch left behind
(spawned replacements, reordered members), so a finding there may belong to
the batch rather than to the case. Before the sweep reports it, the finding's
own replay command (the ``run`` line in ``sweep.csv``, exactly as printed) is
run once more as its own job and judged the same way. The finding then reads
``reproduced alone`` (the alone run found the same: the same outcome, and for a
violation the same first step and invariant), or ``batch only`` with what the
alone run found; a batch-only finding keeps the batch's own replay command
(``batch_replay``: the whole launch again, its cases in the same order, into
fresh folders).
"""
from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from .cases import VIOLATION, Outcome, judge
from .launch import mpibench_command_text, run_job

ENV_PROGRAM = shutil.which("env") or "/usr/bin/env"
REPRODUCED = "reproduced alone"
BATCH_ONLY = "batch only"


def replay_folder(replay: str) -> Path:
    """The output folder a replay command names (its ``--out``)."""
    args = shlex.split(replay)
    return Path(args[args.index("--out") + 1])


def rerun_alone(outcome: Outcome, mpiexec: list[str], deadline_s: float) -> Outcome:
    """Run ``outcome``'s replay command as pasted; record on ``outcome`` whether it found the
    same (``outcome.alone``); return the alone run's own outcome."""
    out_dir = replay_folder(outcome.replay)
    # through env, as a shell would: the replay may begin with NAME=VALUE words
    job = run_job([ENV_PROGRAM, *shlex.split(outcome.replay)], out_dir.parent / "replay-log", deadline_s)
    again = judge(outcome.case, out_dir, job, outcome.replay)
    same = again.outcome == outcome.outcome and (
        outcome.outcome != VIOLATION or again.first_violation == outcome.first_violation)
    outcome.alone = REPRODUCED if same else (
        f"{BATCH_ONLY} (alone: {again.outcome}" + (f", {again.first_violation}" if again.first_violation else "")
        + ")")
    return again


def write_batch_replay(folder: Path, workers: int, entries: list[dict], mpiexec: list[str]) -> str:
    """A plan that runs the batch's cases again in the same order into ``folder/replay/``;
    the command that runs it, as pasted from any directory."""
    replay = folder / "replay"
    again = []
    for entry in entries:
        args = list(entry["args"])
        args[args.index("--out") + 1] = str(replay / entry["case"] / "run")
        again.append({"case": entry["case"], "args": args})
    plan = folder / "replay-plan.json"
    plan.write_text(json.dumps({"schema": 1, "workers": workers, "cases": again}, indent=1) + "\n")
    return mpibench_command_text(mpiexec, workers, ["batch", str(plan)])
