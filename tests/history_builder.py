"""Synthetic run folders for the checker's unit tests: an honest run, simulated in one process.

The builder is test code of its own: it walks the shards with the production
data module, trains with the production model in float32 and writes the
history format of docs/outputs.md ("The history") record by record. Faults are simulated
the simple way (a kill before computing, partitions with a stalled minority
that resyncs when healed, late workers dropped). ``tamper`` edits the
records before they are written, which is how each unit test plants one
mistake. ``steps.csv`` gets one row per committed step, as the first member writes
it (``tamper_rows`` edits those rows the same way).
"""
from __future__ import annotations

import base64
import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mpibench.base.config import RunConfig
from mpibench.engine.data import Cursor, ShardWalker, make_dataset, make_shards
from mpibench.engine.model import MLP, Shapes, init_params


def digest(params) -> str:
    return hashlib.blake2b(np.asarray(params, dtype="<f4").tobytes(), digest_size=16).hexdigest()


def b64(params) -> str:
    return base64.b64encode(np.asarray(params, dtype="<f4").tobytes()).decode()


@dataclass
class Sim:
    world: int = 3
    steps: int = 6
    samples: int = 100
    batch_size: int = 16
    seed: int = 0
    recovery: str = "shrink"
    check_every: int = 1
    straggler: float = 0.0
    kills: list = field(default_factory=list)  # (rank, step): dies before computing
    partitions: list = field(default_factory=list)  # (sides, start, end or None)
    delays: list = field(default_factory=list)  # (rank, steps, seconds)

    def config(self) -> RunConfig:
        return RunConfig(strategy="ring", scenario="synthetic", steps=self.steps, seed=self.seed,
                         recovery=self.recovery, check_every=self.check_every, samples=self.samples,
                         batch_size=self.batch_size, straggler_deadline=self.straggler)


CASE = "000-synthetic-ring-{}"


class Builder:
    def __init__(self, sim: Sim):
        self.sim, self.config = sim, sim.config()
        c = self.config
        self.data = make_dataset(c.seed, c.samples, c.features, c.classes)
        self.shards = make_shards(c.seed, c.samples, sim.world)
        self.walkers = [ShardWalker(c.seed, w, self.shards[w], c.batch_size) for w in range(sim.world)]
        self.model = MLP(Shapes(c.features, c.hidden, c.classes))
        self.params = init_params(c.seed, Shapes(c.features, c.hidden, c.classes))
        self.cursor = {w: Cursor() for w in range(sim.world)}
        self.own = {w: self.params.copy() for w in range(sim.world)}  # each replica
        self.files: dict[str, list[dict]] = {}
        self.current: dict[int, str] = {}
        self.dead: set[int] = set()
        self.rows: list[dict] = []  # steps.csv
        for w in range(sim.world):
            self._open(w, 0, False)

    def _open(self, w: int, step: int, replacement: bool) -> None:
        name = f"worker-{w}.joined-{step:04d}.jsonl" if replacement else f"worker-{w}.jsonl"
        self.files[name] = [{"kind": "open", "schema": 2, "worker": w, "joined_step": step,
                             "replacement": replacement}]
        self.current[w] = name

    def _put(self, w: int, record: dict) -> None:
        self.files[self.current[w]].append(record)

    # ------------------------------------------------------------------ one step
    def step(self, s: int) -> None:
        sim = self.sim
        killed_now = [r for r, at in sim.kills if at == s]
        for r in killed_now:
            self.dead.add(r)  # its file stops here
        live = [w for w in range(sim.world) if w not in self.dead]
        if killed_now:
            for w in live:  # the attempt that saw the death
                self._attempt(w, s, 0, "contribute", live, [], self.cursor[w], self.cursor[w], [], None,
                              error="peer died")
                self._put(w, {"kind": "decision", "step": s, "attempt": 0, "decision": "retry"})
            if sim.recovery == "respawn":
                for r in killed_now:
                    self.dead.discard(r)
                    self._open(r, s, True)
                    self.own[r] = self.params.copy()
                live = [w for w in range(sim.world) if w not in self.dead]
        attempt = 1 if killed_now else 0
        side = self._side(s, live)
        if side is None:
            for w in live:
                self._attempt(w, s, attempt, "stall", live, [], self.cursor[w], self.cursor[w], [], None)
                self._put(w, {"kind": "decision", "step": s, "attempt": attempt, "decision": "skip"})
            return
        for w in side:  # healed workers take the committed parameters
            if not np.array_equal(self.own[w], self.params):
                self.own[w] = self.params.copy()
                self._put(w, {"kind": "resync", "step": s, "params": digest(self.params)})
        late = {r for r, steps, secs in sim.delays if s in steps and sim.straggler and secs >= sim.straggler}
        group = [w for w in side if w not in late]
        self._commit(s, attempt, live, side, group)

    def _side(self, s: int, live: list[int]):
        for sides, start, end in self.sim.partitions:
            if start <= s and (end is None or s < end):
                big = [[w for w in side if w in live] for side in sides]
                big = [side for side in big if 2 * len(side) > len(live)]
                return big[0] if big else None
        return live

    def _commit(self, s: int, attempt: int, live, side, group) -> None:
        batches, before = {}, self.params.copy()
        for w in side:
            batches[w], after = self.walkers[w].batch(self.cursor[w])
            self.cursor[w], batches[w] = after, (batches[w], self.cursor[w], after)
        total = np.zeros_like(self.params)
        count, rows, own_losses = 0, [], {}
        for w in group:
            idx = batches[w][0]
            g, n, losses = self.model.loss_and_grad_sum(self.params, self.data.features[idx], self.data.labels[idx])
            own_losses[w] = np.asarray(losses, dtype=np.float32).copy()
            total += g
            count += n
            rows.append((n, losses.astype(np.float64).sum(), np.square(losses.astype(np.float64)).sum()))
        if count:
            self.params = (self.params - np.float32(self.config.lr) * (total / np.float32(count))).astype(np.float32)
        n_all = sum(r[0] for r in rows)
        mean = sum(r[1] for r in rows) / n_all if n_all else None
        var = sum(r[2] for r in rows) / n_all - mean * mean if n_all else None
        red = {"contributing": sorted(group), "effective_batch": count, "mean": mean, "var": var,
               "before": before, "after": self.params, "group": sorted(group), "losses": own_losses}
        why = {**{w: "dead" for w in range(self.sim.world) if w not in live},
               **{w: "unreachable" for w in live if w not in side}, **{w: "late" for w in side if w not in group}}
        self.rows.append({"scenario": "synthetic", "strategy": "ring", "recovery": self.sim.recovery, "step": s,
                          "epoch": min((batches[w][1].epoch for w in group), default=""),
                          "epoch_ends": " ".join(str(w) for w in side if batches[w][2].epoch != batches[w][1].epoch),
                          "excluded": " ".join(f"{w}:{r}" for w, r in sorted(why.items())),
                          "members": " ".join(map(str, sorted(live))), "contributing": " ".join(map(str, sorted(group))),
                          "effective_batch": count, "loss_mean": "" if mean is None else repr(float(mean)),
                          "loss_var": "" if var is None else repr(float(var)), "step_time_s": 0.001})
        for w in live:
            if w in side:
                idx, cur, after = batches[w]
                self.own[w] = self.params.copy()
                role = "contribute" if w in group else "late"
                self._attempt(w, s, attempt, role, live, sorted(group) if role == "contribute" else [],
                              cur, after, idx, red)
            else:
                self._attempt(w, s, attempt, "stall", live, [], self.cursor[w], self.cursor[w], [], red)
            self._put(w, {"kind": "decision", "step": s, "attempt": attempt, "decision": "commit"})

    def _attempt(self, w, s, attempt, role, members, group, cur, after, batch, red, error=None) -> None:
        mine_before = red["before"] if red and role != "stall" else self.own[w]
        mine_after = red["after"] if red and role != "stall" else self.own[w]
        full = role == "contribute" and red is not None and error is None
        n = len(self.params) + 1
        self._put(w, {
            "kind": "attempt", "step": s, "attempt": attempt, "role": role, "members": sorted(members),
            "group": group, "shard": w, "cursor_before": [cur.epoch, cur.position],
            "cursor_after": [after.epoch, after.position], "batch": [int(i) for i in batch],
            "params_before": digest(mine_before), "params_after": digest(mine_after),
            "contributing": red["contributing"] if red else None,
            "effective_batch": red["effective_batch"] if red else None,
            "pieces": [[0, n]] if red else None, "total_length": n if red else None,
            "loss_mean": red["mean"] if red else None, "loss_var": red["var"] if red else None,
            "error": error, "full_after": b64(mine_after) if full else None,
            "losses": b64(red["losses"][w]) if full else None})

    # ------------------------------------------------------------------ the folder
    def run(self) -> "Builder":
        for s in range(self.sim.steps):
            self.step(s)
        for w, name in self.current.items():
            if w not in self.dead:
                self.files[name].append({"kind": "close", "steps": self.sim.steps})
        return self

    def case_info(self) -> dict:
        sim = self.sim
        return {"schema": 2, "case": CASE.format(sim.recovery), "index": 0, "scenario": "synthetic",
                "strategy": "ring", "recovery": sim.recovery, "world_size": sim.world, "seed": sim.seed,
                "config": self.config.as_dict(),
                "schedule": {"kills": [{"rank": r, "step": s, "phase": "before_compute", "messages": 1}
                                       for r, s in sim.kills],
                             "delays": [{"rank": r, "steps": list(st), "seconds": sec, "where": "compute"}
                                        for r, st, sec in sim.delays],
                             "partitions": [{"sides": [list(x) for x in sides], "start": a, "end": b}
                                            for sides, a, b in sim.partitions]},
                "replay": "mpirun -n 3 python -m mpibench run --scenario synthetic"}

    def write(self, out: Path, tamper=None, tamper_rows=None) -> Path:
        files = {k: [dict(r) for r in v] for k, v in self.files.items()}
        info = self.case_info()
        rows = [dict(r) for r in self.rows]
        if tamper is not None:
            tamper(files, info)
        if tamper_rows is not None:
            tamper_rows(rows)
        case = out / "history" / info["case"]
        case.mkdir(parents=True)
        (out / "run.json").write_text(json.dumps({"cases": [info["case"]]}))
        (case / "case.json").write_text(json.dumps(info))
        for name, records in files.items():
            (case / name).write_text("".join(json.dumps(r) + "\n" for r in records))
        with open(out / "steps.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, STEP_COLUMNS, restval="")
            writer.writeheader()
            writer.writerows(rows)
        return out


# steps.csv's columns (DESIGN, "Outputs"; the builder fills the ones the checker reads)
STEP_COLUMNS = ["scenario", "strategy", "recovery", "step", "epoch", "members", "contributing", "excluded",
                "effective_batch", "epoch_ends", "loss_mean", "loss_var", "step_time_s", "algorithm"]


def build(out: Path, sim: Sim | None = None, tamper=None, tamper_rows=None) -> Path:
    """An honest (or, with ``tamper``/``tamper_rows``, planted) run folder in ``out``."""
    return Builder(sim or Sim()).run().write(out, tamper, tamper_rows)


def find(files: dict, worker: int, step: int, kind: str = "attempt", role: str | None = None) -> dict:
    """The first record of ``kind`` at ``step`` in ``worker``'s files."""
    for name in sorted(files):
        if files[name][0]["worker"] != worker:
            continue
        for r in files[name]:
            if r["kind"] == kind and r.get("step") == step and (role is None or r.get("role") == role):
                return r
    raise KeyError((worker, step, kind))
