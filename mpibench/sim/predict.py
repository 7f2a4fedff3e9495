"""Predictions for a run folder: simulated figures at scale, and at p = 2 beside the measured ones.

``simulated.csv`` gets one row per (kind, strategy, ranks, tag):

* kind ``scale`` -- p = 8 ... 4096 on a described platform: the synchronisation,
  the training step and a death with its recovery, played out round by round
  (:mod:`.rounds`), tagged ``simulated``; beside each, the analytic model's
  synchronisation and step (:mod:`mpibench.results.costmodel`) over the same
  platform figures, tagged ``modelled``. Both take the local step (compute)
  from the run's own calibration.
* kind ``host`` -- p = 2 (and p = 1) on this host: the step the run measured
  for each strategy, part by part (``measured``: steps.csv's fault-free steps,
  scaling.csv's one-rank point), beside the same strategy replayed on the
  simulated engine (``simulated``; how each part is charged:
  :mod:`.hostreplay`).

Simulated figures are never mixed with measured ones: every row carries its tag.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path

from mpibench.base.config import RunConfig, UsageError
from mpibench.base.records import CsvLog
from mpibench.sync.registry import AT_SCALE, MAIN_DEFAULT

from . import rounds
from .network import Network
from .platform import Platform

HOST_PARTS = ("compute_s", "rest_s", "evidence_s", "check_s", "commit_s")  # beside sync_s and step_s
COLUMNS = ["kind", "platform", "strategy", "ranks", "bytes", "sync_s", "step_s", "recovery_s", *HOST_PARTS,
           "cpu_scale", "tag", "notes"]
SCALE_RANKS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
SCALE_STRATEGIES = AT_SCALE
HOST_STRATEGIES = MAIN_DEFAULT  # the strategies a main job measured
HOST_REPEATS = 3  # replays per strategy and rank count; the median over their step medians


def read_run(folder: Path) -> tuple[dict, dict]:
    """(run.json, its calibration); bad input names the folder."""
    try:
        info = json.loads((folder / "run.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"{folder}: no readable run.json ({exc})") from None
    cal = info.get("calibration")
    if not isinstance(cal, dict) or "alpha_s" not in cal:
        raise UsageError(f"{folder}: run.json holds no calibration (run the main job or bench first)")
    return info, cal


def _model_cal(plat: Platform, cal: dict, p: int):
    from mpibench.results.calibration import Calibration

    c = Calibration.from_dict(cal)
    return replace(c, alpha_s=plat.net_latency_s if p > plat.ranks_per_node else plat.node_latency_s,
                   beta_s_per_byte=1 / (plat.net_bytes_per_s if p > plat.ranks_per_node else plat.node_bytes_per_s),
                   gamma_cache_s_per_byte=1 / plat.gamma_bytes_per_s, gamma_memory_s_per_byte=1 / plat.gamma_bytes_per_s,
                   alpha_step_s=0.0, beta_step_s_per_byte=0.0, ranks=p)


def _modelled(mc, strategy: str, p: int, nbytes: int, local_batch: int, per_node: int) -> tuple:
    """(sync_s, step_s) of the analytic model, or blanks where it has no figure for the strategy."""
    from mpibench.results import costmodel

    options = {"ranks_per_node": per_node}
    try:
        return (costmodel.sync_s(mc, strategy, p, nbytes, options),
                costmodel.step_s(mc, strategy, p, local_batch, nbytes, options))
    except (ValueError, KeyError, TypeError):
        return "", ""


def scale_rows(plat: Platform, cal: dict, nbytes: int, local_batch: int, notice_s: float = 1e-3,
               ranks=SCALE_RANKS) -> list[dict]:
    from mpibench.results.calibration import Calibration

    local = Calibration.from_dict(cal).local_step_s(local_batch)
    out = []
    for strategy in SCALE_STRATEGIES:
        for p in ranks:
            sync = rounds.sync_s(plat, strategy, p, nbytes)
            step = local + sync + 2 * rounds.tree_s(plat, p)  # loss statistics and evidence gather
            base = {"kind": "scale", "platform": plat.name, "strategy": strategy, "ranks": p, "bytes": nbytes}
            out.append({**base, "sync_s": sync, "step_s": step,
                        "recovery_s": rounds.recovery_s(plat, strategy, p, nbytes, notice_s), "tag": "simulated",
                        "notes": "; ".join(rounds.notes(plat, strategy, p, nbytes))})
            mc = _model_cal(plat, cal, p)
            sync_m, step_m = _modelled(mc, strategy, p, nbytes, local_batch, plat.ranks_per_node)
            out.append({**base, "sync_s": sync_m, "step_s": step_m, "recovery_s": "", "tag": "modelled"})
    return out


def host_rows(folder: Path, info: dict, cal: dict, work: Path, repeats: int = HOST_REPEATS) -> list[dict]:
    """p = 2 (and p = 1 where scaling.csv has the point): the run's measured step, part by part,
    beside the same strategy replayed on the simulated engine (:mod:`.hostreplay`)."""
    from .hostreplay import compare

    out = []
    for c in compare(folder, info, cal, work, HOST_STRATEGIES, repeats):
        scale = statistics.median(c.cpu_scales) if c.cpu_scales else ""
        for tag, parts in (("measured", c.measured), ("simulated", c.simulated)):
            if not parts:
                continue
            out.append({"kind": "host", "platform": "this host (replayed, cpu clock)" if tag == "simulated"
                        else "this host", "strategy": c.strategy, "ranks": c.ranks, "bytes": "",
                        "sync_s": parts.get("sync_s", ""), "step_s": parts["step_s"], "recovery_s": "",
                        **{k: parts.get(k, "") for k in HOST_PARTS},
                        "cpu_scale": scale if tag == "simulated" else "", "tag": tag})
    return out


def model_bytes(info: dict) -> int:
    """The run's gradient buffer: the MLP's float32 parameters."""
    from mpibench.engine.model import Shapes

    c = {**RunConfig().as_dict(), **info.get("config", {})}
    return 4 * Shapes(c["features"], c["hidden"], c["classes"]).n_params


def predict(folder: Path, plat: Platform, work: Path, sizes=None, ranks=SCALE_RANKS) -> list[dict]:
    """Every row of simulated.csv for the run in ``folder`` (scale rows for ``ranks`` x ``sizes``)."""
    info, cal = read_run(folder)
    batch = {**RunConfig().as_dict(), **info.get("config", {})}["batch_size"]
    rows = []
    for nbytes in sizes or (model_bytes(info), 100 << 20):
        rows += scale_rows(plat, cal, nbytes, batch, ranks=ranks)
    return rows + host_rows(folder, info, cal, work)


def write_rows(folder: Path, rows: list[dict]) -> Path:
    log = CsvLog(str(folder / "simulated.csv"), COLUMNS)
    for row in rows:
        log.write(row)
    log.close()
    return folder / "simulated.csv"
