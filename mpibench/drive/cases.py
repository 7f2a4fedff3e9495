"""One sweep case: a seeded fault schedule run as one MPI job, and its verdict.

A case is (seed, workers, strategy, recovery, steps, schedule, further run
options). It is written to a folder as ``schedule.toml`` and run with ``run
--scenario FILE.toml``, alone or as one case of a batch (:mod:`mpibench.job.batch`),
so the exact command that replays it is an ordinary ``run`` command line. Its
outcome is read back from its output folder by :func:`judge`: a row for
``sweep.csv`` whose columns, the ``_s`` ones aside, depend only on the case. The
verdict is the checker's, computed here from the case's history (never the
launcher's exit status, which can be 0 after a violation): a case whose history
cannot be judged is ``no-verdict``, never a pass. A case the launch cannot support
(the job's probe left it out and exited 4, its ``run.json`` naming what it needs) is
``not-run`` with that reason: neither a pass nor a finding.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from mpibench.faults.toml_io import dump as schedule_toml

from mpibench.base.exits import EXIT_PARTIAL
from mpibench.base.records import STATUS_FILE

from .launch import JobResult, mpibench_command, mpibench_command_text, run_job_again_if_unstarted

OK, VIOLATION, CRASH, HANG, NO_VERDICT = "ok", "violation", "crash", "hang", "no-verdict"
NOT_RUN = "not-run"  # the launch could not support the case: no pass, no finding
OUTCOMES = (OK, VIOLATION, CRASH, HANG, NO_VERDICT, NOT_RUN)


def is_finding(outcome: str) -> bool:
    """Whether an outcome is something the case's code did wrong (ok and not-run are not)."""
    return outcome not in (OK, NOT_RUN)


@dataclass(frozen=True)
class Case:
    case_id: str
    seed: int
    workers: int
    strategy: str
    recovery: str
    steps: int
    schedule: object  # mpibench.faults.schedule.Schedule
    extra: tuple[str, ...] = ()  # further ``run`` options (a --run-parts plugin, data sizes)

    def __post_init__(self):
        # The id names the case's folder: a plugin strategy's module:Class colon would break
        # PATH-like lists and copies (scp, Windows), so it becomes a dot.
        object.__setattr__(self, "case_id", self.case_id.replace(":", "."))

    def run_args(self, schedule_path: Path, out_dir: Path) -> list[str]:
        return ["run", "--strategy", self.strategy, "--scenario", str(schedule_path),
                "--steps", str(self.steps), "--seed", str(self.seed), "--recovery", self.recovery,
                *self.extra, "--out", str(out_dir)]


@dataclass
class Outcome:
    """What a case's job did, as one ``sweep.csv`` row plus the evidence of a crash."""

    case: Case
    outcome: str
    steps: int
    checks: int
    violations: int
    first_violation: str  # "STEP INVARIANT", or what went wrong with the job
    first_invariant: str | None
    replay: str
    job: JobResult
    faults_injected: dict = field(default_factory=dict)  # kind -> count from faults.csv
    minimal: str = ""
    batch_replay: str = ""  # the case ran in a batch: the command that runs that batch again
    alone: str = ""  # a finding from a batch, run again alone (mpibench.drive.alone)

    def row(self) -> dict:
        c = self.case
        return {"case": c.case_id, "seed": c.seed, "workers": c.workers, "strategy": c.strategy,
                "recovery": c.recovery, "faults": fault_text(c.schedule), "steps": self.steps,
                "checks": self.checks, "violations": self.violations,
                "first_violation": self.first_violation, "replay": self.replay,
                "outcome": self.outcome, "minimal_replay": self.minimal, "alone": self.alone,
                "batch_replay": self.batch_replay, "case_time_s": round(self.job.wall_s, 3)}


def stderr_gist(text: str, chars: int = 240) -> str:
    """The line of a job's stderr that best says what went wrong (a signal, else an error)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for needle in ("Signal:", "Error:", "error:", "Exception:"):
        hits = [line for line in lines if needle in line]
        if hits:
            return hits[-1][-chars:]
    return " | ".join(lines[-2:])[-chars:]


def fault_text(schedule) -> str:
    """The schedule's events in one line, without its name."""
    text = schedule.summary()
    return text.split(": ", 1)[1] if ": " in text else text


def write_case(case: Case, folder: Path) -> Path:
    """Write the case's schedule as TOML into ``folder``; the path to give ``--scenario``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "schedule.toml"
    path.write_text(schedule_toml(case.schedule))
    return path


def replay_command(mpiexec: list[str], case: Case, folder: Path, out_name: str = "replay") -> str:
    """The case alone, into its own ``replay`` folder, as one command line that runs as pasted
    from any directory (absolute paths); ``--force``: pasting it again replaces the previous
    replay there instead of being refused (that folder holds nothing else)."""
    folder = Path(folder).absolute()
    args = case.run_args(folder / "schedule.toml", folder / out_name)
    args = args[:-2] + ["--force"] + args[-2:]  # the folder stays the last word
    return mpibench_command_text(mpiexec, case.workers, args)


def run_case(case: Case, folder: Path, mpiexec: list[str], deadline_s: float) -> Outcome:
    """Run one case as one MPI job in ``folder`` and read its verdict."""
    schedule_path = write_case(case, folder)
    out_dir = folder / "run"
    cmd = mpibench_command(mpiexec, case.workers, case.run_args(schedule_path, out_dir))
    job = run_job_again_if_unstarted(cmd, folder, deadline_s, started=out_dir.exists, run_dir=out_dir)
    return judge(case, out_dir, job, replay_command(mpiexec, case, folder))


def read_rows(path: Path) -> list[dict]:
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def case_verdict(out_dir: Path):
    """The checker's verdict on a job's output folder (also written there as verdict.json)."""
    from mpibench.check import check_run, write_outputs

    verdict = check_run(str(out_dir))
    if (out_dir / "run.json").exists():
        write_outputs(str(out_dir), verdict)
    return verdict


def batch_case_job(out_dir: Path, batch: JobResult, last: bool) -> JobResult:
    """What one case of a batch amounts to, as if it had been its own job.

    A finished case has the exit status its ``run`` command would have had (from
    its status file); the batch's own trouble (a crash or hang before this case
    finished, or at exit after the last case) is charged to the case it happened in.
    """
    try:
        status = json.loads((out_dir / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return batch
    code = status["exit_status"]
    if last and (batch.hung or batch.returncode != 0):
        code = batch.returncode
    return JobResult(code, float(status.get("wall_s", 0.0)), batch.deadline_s, batch.stdout_tail, batch.stderr_tail)


def not_run_needs(out_dir: Path) -> str:
    """What the launch lacked for the cases its probe left out (``run.json``'s ``not_run``);
    empty when it left none out or there is no readable run.json."""
    try:
        left_out = json.loads((out_dir / "run.json").read_text()).get("not_run") or {}
    except (OSError, ValueError, AttributeError):
        return ""
    return "; ".join(sorted({str(needs) for needs in left_out.values()}))


def judge(case: Case, out_dir: Path, job: JobResult, replay: str, in_batch: bool = False,
          launch_started: bool | None = None) -> Outcome:
    """The case's outcome from the checker's verdict; a broken job is a finding, not a pass.

    ``in_batch``: the case ran in a batch (``job`` from :func:`batch_case_job`); it
    finished only if its status file exists, whatever the batch's exit status.
    ``launch_started``: whether anything of the launch began (default: this case's
    folder exists); a failed launch that began nothing was already tried twice.
    """
    if launch_started is None:
        launch_started = out_dir.exists()
    verdict = case_verdict(out_dir)
    steps = sum(c.steps for c in verdict.cases)
    injected: dict[str, int] = {}
    for row in read_rows(out_dir / "faults.csv"):
        injected[row["kind"]] = injected.get(row["kind"], 0) + 1
    v = verdict.first_violation
    first = f"{v.step} {v.invariant}" if v else ""
    # The summary was printed (or the batch recorded the case): any trouble came on the way out.
    finished = (out_dir / STATUS_FILE).exists() if in_batch else "wall time" in job.stdout_tail
    if verdict.verdict == "fail":
        outcome = VIOLATION  # whatever the launcher said
    elif job.hung:
        outcome = HANG
        first = (f"hung at exit after a finished run (killed at the {job.deadline_s:g} s deadline)"
                 if finished else f"hung: no exit within the {job.deadline_s:g} s deadline")
    elif job.returncode == EXIT_PARTIAL and (needs := not_run_needs(out_dir)) and not verdict.cases:
        outcome = NOT_RUN  # the job's probe found the launch cannot support the case
        first = f"not run: needs {needs}"
    elif job.returncode != 0 and not launch_started:
        outcome = CRASH  # the launcher failed twice before anything of the case ran
        first = f"the launch failed (exit {job.returncode}, twice) before this case started"
    elif in_batch and not finished:
        outcome = CRASH
        first = f"the batch job ended (exit {job.returncode}) during this case"
    elif job.returncode != 0:
        outcome = CRASH
        first = (f"job exited {job.returncode}" + (" at exit after a finished run" if finished else "")
                 + (f"; no verdict: {verdict.reason}" if verdict.verdict == "unknown" else ""))
    elif verdict.verdict == "unknown":
        outcome = NO_VERDICT
        first = f"no verdict: {verdict.reason}"
    else:
        outcome = OK
    return Outcome(case, outcome, steps, verdict.checks, verdict.violations, first,
                   v.invariant if v else None, replay, job, injected)
