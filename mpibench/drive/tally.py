"""How a sweep went, in numbers and words: outcome counts, the faults scheduled and
injected, the summary printed at its end, and the exit status the outcomes give
(a finding 1, else not-run cases 4, else 0). Shared by ``sweep`` and the main
job's own sweep."""
from __future__ import annotations

from mpibench.base.exits import EXIT_PARTIAL
from mpibench.faults import kinds

from .alone import BATCH_ONLY
from .cases import CRASH, HANG, NO_VERDICT, NOT_RUN, OK, OUTCOMES, VIOLATION, Outcome, is_finding, stderr_gist


def tally(outcomes: list[Outcome]) -> dict:
    """Outcome counts, scheduled events by kind, and faults.csv rows by kind."""
    counts = {k: sum(o.outcome == k for o in outcomes) for k in OUTCOMES}
    planned = {k.NAME: 0 for k in kinds.KINDS}
    injected: dict[str, int] = {}
    for o in outcomes:
        for event in o.case.schedule.events:
            planned[event.kind] = planned.get(event.kind, 0) + 1
        for kind, n in o.faults_injected.items():
            injected[kind] = injected.get(kind, 0) + n
    spread = {name: _count(getattr(o.case, name) for o in outcomes) for name in ("workers", "strategy", "recovery")}
    return {"outcomes": counts, "scheduled": planned, "injected": dict(sorted(injected.items())), "cases_by": spread}


def _count(values) -> dict:
    counts: dict = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return dict(sorted(counts.items()))


def sweep_status(outcomes: list[Outcome]) -> int:
    """1 on any finding; else 4 (partial) when the launch could not run some cases; else 0."""
    if any(is_finding(o.outcome) for o in outcomes):
        return 1
    return EXIT_PARTIAL if any(o.outcome == NOT_RUN for o in outcomes) else 0


def summary_text(outcomes: list[Outcome], wall_s: float) -> str:
    t = tally(outcomes)
    counts, planned, injected = t["outcomes"], t["scheduled"], t["injected"]
    rate = len(outcomes) / (wall_s / 60) if wall_s > 0 else 0.0
    lines = [f"{len(outcomes)} cases in {wall_s:.0f} s ({rate:.1f} cases/min): "
             f"{counts[OK]} ok, {counts[VIOLATION]} violating, {counts[CRASH]} crashed, {counts[HANG]} hung, "
             f"{counts[NO_VERDICT]} without a verdict"
             + (f", {counts[NOT_RUN]} not run (the launch cannot support them)" if counts[NOT_RUN] else ""),
             f"scheduled: {planned['kill']} kills, {planned['partition']} partitions, "
             f"{planned['delay']} stragglers"
             + "".join(f", {n} {name}" for name, n in planned.items() if name not in ("kill", "partition", "delay"))
             + "; faults.csv rows: "
             + (", ".join(f"{n} {k}" for k, n in sorted(injected.items())) or "none")]
    for o in outcomes:
        if o.outcome != OK:
            gist = (f"\n    stderr: {stderr_gist(o.job.stderr_tail)}" if o.outcome in (CRASH, HANG, NO_VERDICT)
                    else "")
            lines.append(f"  {o.outcome}: {o.case.case_id} {o.first_violation}{gist}"
                         + (f"\n    {o.alone}" if o.alone else "") + f"\n    replay: {o.replay}"
                         + (f"\n    batch replay: {o.batch_replay}" if o.alone.startswith(BATCH_ONLY) else "")
                         + (f"\n    minimal: {o.minimal}" if o.minimal else ""))
    return "\n".join(lines)
