"""The fault log: one ``faults.csv`` row per fault the survivors saw and what they did.

Rows are written by rank 0 of the current membership (whoever that is after
kills and respawns) through the process's record files, and hold only what
the seed decides: process ids and the error class a survivor happened to see
first differ between runs and go to the job's log (stdout) instead.
"""
from __future__ import annotations

from mpibench.base.records import ranks_text

from . import kinds


class FaultLog:
    def __init__(self, config, schedule, pids: dict[int, int]):
        self.config, self.schedule = config, schedule
        self.pids = dict(pids)  # worker id -> pid, for the job's log

    def row(self, trainer, step, phase, rank, kind, detail) -> None:
        """One row, written only by the membership's first rank."""
        if trainer.comm.rank != 0:
            return
        trainer.records.faults.write({"scenario": self.config.scenario, "strategy": self.config.strategy,
                                      "step": step, "phase": phase, "rank": rank, "kind": kind,
                                      "detail": detail})

    def kills(self, trainer, step: int, gone, error) -> None:
        """Scheduled kills as ``kill`` rows; a failure the schedule did not cause (the runtime
        reported it: a crash, or a live worker its failure detector suspected) as ``suspected``."""
        scheduled = {k.rank: k for k in self.schedule.kills}
        for w in gone:
            k = scheduled.get(w)
            if k is None:
                self.row(trainer, step, "unscheduled", w, "suspected",
                         f"reported failed by the runtime, not in the schedule; shrunk at step {step}; "
                         f"survivors saw: {' '.join(str(error).split())}")
            else:
                extra = f" after {k.messages} message(s)" if k.phase in ("mid_reduction", "mid_gather") else ""
                self.row(trainer, k.step, k.phase, w, "kill", f"SIGKILL signal 9{extra}; shrunk at step {step}")
            if trainer.comm.rank == 0:
                what = "killed" if k else "reported failed (not scheduled: suspected)"
                print(f"fault: worker {w} (pid {self.pids.get(w, '?')}) {what} at step {step}; "
                      f"survivors saw: {error}", flush=True)

    def no_quorum(self, trainer, step: int, previous, survivors) -> None:
        """The survivors of a shrink hold no quorum of ``previous``: they stall for good."""
        self.row(trainer, step, "recovery", ranks_text(survivors), "no-quorum",
                 f"survivors of members {ranks_text(previous)} hold no majority: nothing committed")
        if trainer.comm.rank == 0:
            print(f"fault: no quorum: workers {ranks_text(survivors)} of {ranks_text(previous)} "
                  f"stall at step {step} (failures may be false suspicions); the watchdog ends them",
                  flush=True)

    def delays(self, trainer, step: int, late) -> None:
        for d in self.schedule.delays:
            if step in d.steps and d.rank in trainer.comm.worker_ids:
                fate = "dropped from this step (late)" if d.rank in late else "waited for"
                self.row(trainer, step, d.where, d.rank, "delay", f"{d.seconds:g} s before {d.where}; {fate}")

    def outside_kinds(self, trainer, step: int) -> None:
        """A row for each event of a kind with a ``log_row`` (outside kinds) at a committed step."""
        for event in self.schedule.events:
            log_row = kinds.of(event).log_row
            row = log_row(event, step) if log_row is not None else None
            if row is not None:
                phase, rank, detail = row
                self.row(trainer, step, phase, rank, event.kind, detail)

    def stalls(self, trainer, step: int, committed: bool, digests: dict[int, str]) -> None:
        why = "no majority: nothing committed" if not committed else "cut off: nothing applied"
        for w, d in sorted(digests.items()):
            self.row(trainer, step, "", w, "stall", f"{why}; params digest {_short(d)}")

    def partition(self, trainer, step: int, members, sides, majority) -> None:
        what = ("no side holds a majority: nothing commits" if not majority
                else f"committing side {ranks_text(majority)}")
        cut = sorted(set(members) - set(majority or ())) or list(members)
        self.row(trainer, step, "", ranks_text(cut), "partition",
                 f"sides {' | '.join(ranks_text(s) for s in sides)}; {what}")

    def resync(self, trainer, step: int, rejoining, source: int, params_digest: str) -> None:
        for w in rejoining:
            self.row(trainer, step, "before_compute", w, "resync",
                     f"healed: parameters from worker {source} (digest {_short(params_digest)}); rejoins")

    def respawn(self, trainer, step: int, worker: int, cursor, params_digest: str) -> None:
        self.row(trainer, step, "recovery", worker, "respawn",
                 f"replacement resumes shard {worker} at epoch {cursor.epoch} "
                 f"position {cursor.position}; params digest {_short(params_digest)}")
        if trainer.comm.rank == 0:
            print(f"fault: replacement for worker {worker} is pid {self.pids.get(worker, '?')}", flush=True)


def _short(digest) -> str:
    """The first 12 hex digits of a history digest, its form's prefix (``xxh3:``) left out."""
    return str(digest).rsplit(":", 1)[-1][:12]
