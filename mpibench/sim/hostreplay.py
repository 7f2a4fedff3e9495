"""A run's measured step on this host, part by part, beside the same strategy replayed on the simulated engine.

At p = 2 the measured figures are the run's fault-free steps (``steps.csv``,
the first member's parts), at p = 1 the scaling measurement's one-rank points
(``scaling.csv``). The replay runs the same job (the worker loop, the strategy,
the history writer, the step records) on simulated processes, and charges
each part of a step from the run folder's own figures; nothing is fitted to
the step time:

* a message costs ``alpha + n beta`` with the run's calibration as a training
  step sees it (``alpha_step_s``, ``beta_step_s_per_byte``: the ping-pong right
  after a local step); a library collective what the usual algorithms cost
  over the same figures (:mod:`.network`);
* the simulator's own work inside a simulated MPI call is not charged (the
  figures above are that call's cost; :func:`mpibench.sim.mpi.uncharged`);
* every other line a rank runs -- the gradient, the strategy's packing,
  serving and applying, the loss statistics' bookkeeping, the history writer,
  the step records -- is charged its CPU time in this process times
  ``cpu_scale``, the host's speed in the run over its speed now;
* ``cpu_scale`` is the run's measured compute part over the compute part of
  a replay at scale 1 (the same code, in this process), corrected replay by
  replay as this host's speed moves; only replays whose compute part came out
  within 10 % of the measured one count (:func:`replay`).

So the compute part agrees by construction: it is an input, not a
prediction. The reduction, the rest of the step timer's span (``rest_s``: the
loss statistics' collective, the recovery's share of the outcome, the
batch), the evidence and the step records are predicted from it. What the
replay does not model is the host's jitter: a rank descheduled or woken late
makes the other wait inside its reduction; the simulated ranks never are.
"""
from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from mpibench.base.config import RunConfig
from mpibench.sync.registry import MAIN_DEFAULT

from .jobs import SimSettings, simulate_run
from .network import Network

PARTS = ("step_s", "compute_s", "sync_s", "rest_s", "evidence_s", "check_s", "commit_s")
WARMUP_STEPS = 2  # the first steps of a case are left out, as the scaling points leave them out
STRATEGIES = MAIN_DEFAULT  # the strategies a main job measured
COMPUTE_MATCH = 0.10  # a replay counts when its compute part is this close to the measured one
ONE_RANK_MODE = "weak"  # scaling.csv's one-rank point replayed at p = 1


@dataclass(frozen=True)
class Comparison:
    """One strategy at one rank count: measured parts beside simulated ones (seconds)."""

    strategy: str
    ranks: int
    measured: dict
    simulated: dict
    cpu_scales: tuple  # the speed ratio of each replay

    def ratio(self, part: str = "step_s") -> float | None:
        m, s = self.measured.get(part), self.simulated.get(part)
        return s / m if m and s is not None else None


def steps_parts(path: Path, strategy: str) -> dict:
    """Medians over the fault-free steps of ``strategy`` in a steps.csv (after the warm-up)."""
    rows = []
    try:
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("scenario") == "none" and r.get("strategy") == strategy
                    and r.get("step", "").isdigit() and int(r["step"]) >= WARMUP_STEPS]
    except OSError:
        pass
    if not rows:
        return {}
    per_step = {"step_s": "step_time_s", "compute_s": "compute_s", "sync_s": "sync_time_s",
                "evidence_s": "evidence_s", "check_s": "check_time_s", "commit_s": "commit_s"}
    out = {k: statistics.median(float(r[c]) for r in rows) for k, c in per_step.items()}
    out["rest_s"] = statistics.median(float(r["step_time_s"]) - float(r["compute_s"]) - float(r["sync_time_s"])
                                      for r in rows)
    return out


def one_rank_parts(folder: Path, strategy: str) -> tuple[dict, int | None]:
    """scaling.csv's measured one-rank point of ``strategy`` (its medians) and its local batch."""
    try:
        with open(folder / "scaling.csv", newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("tag") == "measured" and r.get("ranks") == "1"
                    and r.get("mode") == ONE_RANK_MODE and r.get("strategy") == strategy]
    except OSError:
        return {}, None
    if not rows or not rows[0].get("compute_s"):
        return {}, None
    r = rows[0]
    names = {"step_s": "step_time_s", "compute_s": "compute_s", "sync_s": "reduction_s",
             "evidence_s": "evidence_s", "check_s": "check_s", "commit_s": "commit_s"}
    out = {k: float(r[c]) for k, c in names.items() if r.get(c)}
    out["rest_s"] = out["step_s"] - out["compute_s"] - out.get("sync_s", 0.0)  # from the medians
    return out, int(r["local_batch"])


def network(cal: dict) -> Network:
    """The messages' cost as a training step sees it, from the run's calibration."""
    return Network(alpha_s=cal.get("alpha_step_s") or cal["alpha_s"],
                   beta_s_per_byte=cal.get("beta_step_s_per_byte") or cal["beta_s_per_byte"],
                   gamma_s_per_byte=cal.get("gamma_cache_s_per_byte") or Network().gamma_s_per_byte)


def _simulate(config: RunConfig, ranks: int, out: Path, net: Network, scale: float) -> dict:
    settings = SimSettings(net=net, measure_compute="cpu", cpu_scale=scale)
    simulate_run(config, str(out), ranks, settings, quiet=True)
    return steps_parts(out / "steps.csv", config.strategy)


def replay(config: RunConfig, ranks: int, net: Network, compute_s: float, work: Path,
           repeats: int = 3, tries: int = 0) -> tuple[dict, tuple]:
    """The simulated parts (medians over ``repeats`` replays) and each kept replay's speed ratio.

    A probe at scale 1 sets the first ratio; each replay then corrects it by how far its own
    compute part came out from the measured one (this host's speed moves between runs), and a
    replay counts only when its compute part is within ``COMPUTE_MATCH`` of the measured one
    (the host ran at the speed its ratio assumed); after ``tries`` runs (default 3 x repeats)
    without enough of them, every replay counts. A first run warms the process."""
    import io
    from contextlib import redirect_stdout

    from mpibench.job.timing import blas_one_thread

    kept, every = [], []
    # BLAS on one thread, as the run's ranks computed: a second BLAS thread's spinning on this
    # host would be charged to the calling thread's CPU time.
    with redirect_stdout(io.StringIO()), blas_one_thread():  # the runs' tables: a comparison, not a run
        _simulate(config, ranks, work / "warm", net, 1.0)
        probe = _simulate(config, ranks, work / "probe", net, 1.0)
        scale = compute_s / probe["compute_s"] if probe.get("compute_s") else 1.0
        for i in range(tries or 3 * repeats):
            parts = _simulate(config, ranks, work / f"replay-{i}", net, scale)
            if not parts.get("compute_s"):
                continue
            every.append((parts, scale))
            if abs(parts["compute_s"] / compute_s - 1) <= COMPUTE_MATCH:
                kept.append((parts, scale))
                if len(kept) == repeats:
                    break
            scale *= compute_s / parts["compute_s"]
    runs = kept if len(kept) == repeats else every
    if not runs:
        return {}, ()
    return ({k: statistics.median(r[k] for r, _ in runs) for k in PARTS if all(k in r for r, _ in runs)},
            tuple(sc for _, sc in runs))


def run_config(info: dict, **changes) -> RunConfig:
    names = RunConfig.__dataclass_fields__
    fields = {k: v for k, v in info.get("config", {}).items() if k in names}
    return RunConfig(**{**fields, "scenario": "none", **changes})


def compare(folder: Path, info: dict, cal: dict, work: Path, strategies=STRATEGIES, repeats: int = 3,
            one_rank: bool = True) -> list[Comparison]:
    """Every strategy the run measured: at p = 2 (its fault-free scenario) and at p = 1 (its
    one-rank scaling point, when ``one_rank`` and scaling.csv holds it)."""
    from mpibench.job.scaling import ScalingPlan

    net, out = network(cal), []
    for strategy in strategies:
        measured = steps_parts(folder / "steps.csv", strategy)
        if measured:
            sim, scales = replay(run_config(info, strategy=strategy), 2, net, measured["compute_s"],
                                 work / f"p2-{strategy}", repeats)
            out.append(Comparison(strategy, 2, measured, sim, scales))
        single, batch = one_rank_parts(folder, strategy) if one_rank else ({}, None)
        if single:
            shapes = cal.get("shapes") or {}
            plan = ScalingPlan(**{k: shapes[k] for k in ("features", "hidden", "classes") if k in shapes})
            sim, scales = replay(plan.config(run_config(info), strategy, batch), 1, net, single["compute_s"], work / f"p1-{strategy}", repeats)
            out.append(Comparison(strategy, 1, single, sim, scales))
    return out
