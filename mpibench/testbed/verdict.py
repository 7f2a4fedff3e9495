"""The verdict on a run across testbed hosts, from its records and log, never mpirun's status.

``mpirun`` was seen to exit 0 after ranks called ``MPI_Abort`` (fault tolerance
on, spawned jobs recoverable), so a run counts as passed only when
``invariants.csv`` exists, every row passed, and the summary the recorder prints
came out. For a real network partition the verdict also names what the
runtime made of the cut:

``tolerated``
    nothing committed while the cut was in place; after the heal the run went
    on and every invariant held (the runtime saw only a slow network);
``stalled``
    nothing committed during the cut and the step watchdog ended the job
    (``stuck:`` lines): safe, not live -- exit 1, as for any run that cannot
    make progress;
``failure``
    the runtime declared processes across the cut dead (ULFM fail-stop with
    the heartbeat detector on: ``reported failed`` lines, ``suspected`` rows)
    and the majority went on; a cut-off side without quorum stalled;
``split-brain``
    a side without worker 0 committed a step on its own after the cut (its
    workers' histories show it), or declared worker 0's side dead without
    stalling for lack of quorum (no ``fault: no quorum`` line).

Exit status: 0 passed, 1 violated or no progress, 3 no verdict.
"""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .netfault import NetPartition, Timeline, committed_steps

KILLED_LINE = re.compile(r"fault: worker (\d+) \(pid \d+\) (?:killed|reported failed)[^\n]* at step (\d+)[^\n]*")
NO_QUORUM_LINE = re.compile(r"fault: no quorum: workers ([\d ]+) of [^\n]*")
STUCK_LINE = re.compile(r"\[\d+@[^\]]+\] stuck: [^\n]*")


@dataclass(frozen=True)
class Verdict:
    status: int  # 0 passed, 1 violated / no progress, 3 no verdict
    outcome: str  # passed | violated | no-verdict | tolerated | stalled | failure | split-brain
    detail: str
    log_lines: tuple[str, ...] = ()

    def line(self) -> str:
        return f"verdict: {self.outcome} (exit {self.status}): {self.detail}"


def invariant_rows(out: Path) -> list[dict] | None:
    try:
        with open(Path(out) / "invariants.csv", newline="") as fh:
            return list(csv.DictReader(fh))
    except OSError:
        return None


def judge(out: Path, text: str, steps: int) -> Verdict:
    """A plain run: passed only with every invariant row true and every step committed."""
    rows = invariant_rows(out)
    if rows is None or not rows:
        return Verdict(3, "no-verdict", "no invariants.csv rows: the run left no evidence")
    failed = [r for r in rows if r["passed"] != "true"]
    if failed:
        first = failed[0]
        return Verdict(1, "violated", f"{len(failed)} invariant rows failed; first: step "
                       f"{first['step']} {first['invariant']} ({first['detail']})")
    done = committed_steps(out)
    if not done or max(done) != steps - 1:
        stuck = tuple(STUCK_LINE.findall(text))
        return Verdict(1 if stuck else 3, "no-progress" if stuck else "no-verdict",
                       f"steps.csv ends at step {max(done) if done else 'none'} of {steps - 1}",
                       stuck)
    return Verdict(0, "passed", f"{len(rows)} invariant rows passed over {len(done)} steps")


def judge_partition(out: Path, text: str, steps: int, partition: NetPartition,
                    ranks_per_host: int, timeline: Timeline) -> Verdict:
    """A run under a real network cut: what the runtime did, and whether the suite held."""
    if timeline.problem:
        return Verdict(3, "no-verdict", timeline.problem)
    if timeline.at("cut") is None:
        return Verdict(3, "no-verdict", f"the job never reached step {partition.at_step - 1}: "
                       "the cut was not applied")
    majority = set(partition.workers(0, ranks_per_host))
    killed = [(int(w), int(s), m.group(0)) for m in KILLED_LINE.finditer(text)
              for w, s in [m.groups()]]
    stuck = tuple(STUCK_LINE.findall(text))
    during = _committed_during_cut(timeline)
    base = judge(out, text, steps)
    fenced = {int(w) for m in NO_QUORUM_LINE.finditer(text) for w in m.group(1).split()}
    lines = (tuple(line for *_, line in killed)
             + tuple(m.group(0) for m in NO_QUORUM_LINE.finditer(text)) + stuck)
    alone = side_commits(out, set(partition.workers(1, ranks_per_host)), partition.at_step)
    victims = sorted({w for w, _, _ in killed if w in majority})
    if alone or (victims and not fenced):
        return Verdict(1, "split-brain", f"a side without worker 0 declared workers {victims} dead "
                       f"and went on alone (committed steps {alone or '?'}); {base.detail}", lines)
    if killed:
        stalled = f"; workers {sorted(fenced)} held no quorum and stalled" if fenced else ""
        return Verdict(1, "failure", "the runtime declared workers "
                       f"{sorted({w for w, _, _ in killed if w not in majority})} dead across the cut "
                       f"(fail-stop); the majority went on{stalled}; {base.detail}", lines)
    if during:
        return Verdict(1, "violated", f"{during} step(s) committed while the cut was in place "
                       "although no side was declared dead", lines)
    if stuck:
        return Verdict(1, "stalled", f"nothing committed during the cut; the step watchdog ended "
                       f"the job at step {partition.at_step} (safe, no progress)", stuck)
    if base.status != 0:
        return base
    return Verdict(0, "tolerated", "nothing committed during the cut; after the heal the run "
                   f"finished and every invariant held ({base.detail})")


def side_commits(out: Path, workers: set, from_step: int) -> list[int]:
    """Steps from ``from_step`` on that ``workers`` committed among themselves alone (their
    histories: a committed attempt whose step group lies inside ``workers``)."""
    groups, steps = {}, set()
    for path in sorted(Path(out).glob("history/*/worker-*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut by a killed process
            key = (path, rec.get("step"), rec.get("attempt"))
            if rec.get("kind") == "attempt":
                groups[key] = set(rec.get("group") or ())
            elif rec.get("kind") == "decision" and rec.get("decision") == "commit":
                group = groups.get(key, set())
                if group and group <= workers and key[1] >= from_step:
                    steps.add(key[1])
    return sorted(steps)


def _committed_during_cut(timeline: Timeline) -> int:
    marks = {what: seen for what, _, seen in timeline.events}
    if "cut" not in marks or "heal" not in marks:
        return 0
    return marks["heal"] - marks["cut"]
