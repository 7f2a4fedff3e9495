"""Measured against modelled: the ratio, the tolerance, and a flag with its likely cause.

Two kinds of figure are compared: a collective's time from ``bench.csv``
(measured rows against the model's row for the same strategy, ranks and
bytes) and a training step's time from ``scaling.csv``. A disagreement beyond
the tolerance is a finding, not an error: the flag names every cause the data
supports (more ranks than cores, a straggler, latency-bound sizes, memory
bandwidth; for a step, which part missed and whether the ranks reached the
sync apart), or says that none does. A step at p = 1 is held to a tighter
tolerance: its modelled local work is a measurement of the same loop.
"""
from __future__ import annotations

import pandas as pd

from . import costmodel
from .calibration import Calibration

TOLERANCE = 0.25  # |modelled - measured| / measured
ONE_RANK_TOLERANCE = 0.15  # a step at p = 1: the model's local work is a measurement of the same loop
STRAGGLER_SPREAD = 1.5  # slowest (or p90) over typical time
LATENCY_BOUND_SHARE = 0.5  # alpha terms' share of the modelled sync
MEMORY_BOUND_BYTES = 8 << 20  # bytes reduced at once over all ranks of the host
HOST_BUSY_CORES = 0.5  # cores other processes kept busy during a measurement

COMPARISON_COLUMNS = ["kind", "strategy", "mode", "ranks", "bytes", "local_batch", "other_load_cores",
                      "measured_s", "modelled_s", "ratio", "error", "tolerance", "within", "flag",
                      "cause_codes", "cause", "assumptions", "parts"]


def cores_for(cal: Calibration, ranks: int) -> tuple[int, int]:
    """(ranks on the busiest host, cores there) when the first ``ranks`` ranks run."""
    return min(ranks, cal.ranks_on_host), cal.cores


def causes(cal: Calibration, strategy: str, ranks: int, nbytes: float, ratio: float,
           spread: float | None, options: dict, other_cores: float | None = None,
           modelled: float | None = None) -> list[tuple[str, str]]:
    """Every likely cause the data supports for a disagreement, as (code, sentence)."""
    found = []
    on_host, cores = cores_for(cal, ranks)
    if ratio < 1:
        busy = cal.other_load_cores
        if busy is not None and busy > HOST_BUSY_CORES:
            return [("faster", f"faster than modelled: the calibration ran while other processes kept "
                               f"{busy:.1f} of {cores} cores busy, so its figures are inflated")]
        return [("faster", "faster than modelled: the implementation beats the modelled algorithm "
                           "(e.g. shared-memory collectives, or alpha/beta overestimated by ping-pong)")]
    if on_host > cores:
        shared = (f"; time-sharing alone would give {modelled * on_host / cores * 1e3:.3g} ms, "
                  f"the model x {on_host}/{cores}" if modelled else "")
        found.append(("oversubscribed", f"more ranks than cores: {on_host} ranks time-share {cores} cores "
                                        f"(the model assumes one core per rank{shared})"))
    if other_cores is not None and other_cores > HOST_BUSY_CORES:
        found.append(("host_busy", f"host busy: other processes kept {other_cores:.1f} of {cores} cores "
                                   "busy while this run measured"))
    if spread is not None and spread > STRAGGLER_SPREAD:
        found.append(("straggler", f"straggler delay: the slow tail is {spread:.1f}x the typical time"))
    share = costmodel.latency_share(cal, strategy, ranks, nbytes, options) if strategy else 0.0
    if share > LATENCY_BOUND_SHARE:
        found.append(("latency_bound", f"latency-bound size: {share:.0%} of the modelled sync is alpha; "
                                       "per-call overheads beyond a ping-pong dominate"))
    if ranks > 1 and nbytes * on_host >= MEMORY_BOUND_BYTES:
        found.append(("memory_bandwidth", f"memory bandwidth: {on_host} ranks reduce {nbytes / 2**20:.1f} MiB "
                                          "each at once; gamma was measured on one rank alone"))
    return found or [("unexplained", "slower than modelled; none of the known causes shows in the data")]


def step_parts(measured_step: float, measured_sync: float, modelled_step: float,
               modelled_sync: float, sync_wait: float = 0.0,
               tolerance: float = TOLERANCE, modelled_wait: float = 0.0) -> list[tuple[str, str]]:
    """Which part of a step missed: local work (step less sync: compute, loss statistics,
    bookkeeping) against the one-rank calibration, the gradient sync against its model, and
    how far apart the ranks reached the sync (``sync_wait``) beyond the wait the loops run
    beside the point foresaw (``modelled_wait``, a part of the modelled step)."""
    found = []
    beyond = sync_wait - modelled_wait
    if beyond > 0 and measured_step > 0 and beyond / measured_step > tolerance / 2:
        found.append(("arrival_skew", f"ranks reach the sync apart: the first waits {sync_wait * 1e3:.3g} ms "
                                      f"per step for the last ({sync_wait / measured_step:.0%} of the step), "
                                      f"against {modelled_wait * 1e3:.3g} ms foreseen by the loops beside the point"))
    local, local_model = measured_step - measured_sync, modelled_step - modelled_sync - modelled_wait
    if local > 0 and local_model > 0 and abs(local_model - local) / local > tolerance:
        found.append(("local_work", f"local work (step less sync) {local * 1e3:.3g} ms measured against "
                                    f"{local_model * 1e3:.3g} ms of the one-rank loop run beside the point "
                                    f"({local / local_model - 1:+.0%})"))
    if measured_sync > 0 and modelled_sync > 0 and abs(modelled_sync - measured_sync) / measured_step > tolerance / 2:
        found.append(("sync_part", f"sync {measured_sync * 1e3:.3g} ms measured against {modelled_sync * 1e3:.3g} ms "
                                   f"modelled ({measured_sync / modelled_sync:.2f}x)"))
    return found


def judge(cal: Calibration, strategy: str, ranks: int, nbytes: float, measured: float,
          modelled: float, spread: float | None, options: dict, other_cores: float | None = None,
          parts: list[tuple[str, str]] | None = None, tolerance: float = TOLERANCE) -> dict:
    """``parts``: where a step's miss lies (:func:`step_parts`); it replaces "unexplained"."""
    ratio = measured / modelled if modelled > 0 else float("inf")
    error = (modelled - measured) / measured if measured > 0 else float("inf")
    within = abs(error) <= tolerance
    found = [] if within else causes(cal, strategy, ranks, nbytes, ratio, spread, options, other_cores,
                                     modelled)
    if not within and parts:  # where a step missed says more than the collectives' generic causes
        found = [f for f in found if f[0] not in ("unexplained", "faster")] + parts
    return {"measured_s": measured, "modelled_s": modelled, "ratio": ratio, "error": error,
            "tolerance": tolerance, "within": within,
            "flag": "" if within else ("slower than modelled" if ratio > 1 else "faster than modelled"),
            "cause_codes": " ".join(code for code, _ in found),
            "cause": "; ".join(text for _, text in found),
            "assumptions": costmodel.assumptions_text()}


def compare_steps(cal: Calibration, scaling: pd.DataFrame, options: dict) -> list[dict]:
    """One row per measured scaling point that has a modelled twin."""
    if scaling is None or scaling.empty:
        return []
    keys = ["strategy", "mode", "ranks", "local_batch"]
    measured = scaling[scaling.tag == "measured"]
    model = scaling[scaling.tag == "modelled"].set_index(keys)
    rows = []
    for m in measured.itertuples(index=False):
        key = (m.strategy, m.mode, m.ranks, m.local_batch)
        if key not in model.index:
            continue
        spread = m.step_time_p90_s / m.step_time_s if m.step_time_s else None
        other = getattr(m, "other_load_cores", None)
        other = None if other is None or pd.isna(other) or other == "" else float(other)
        modelled = model.loc[key]
        tolerance = ONE_RANK_TOLERANCE if m.ranks == 1 else TOLERANCE
        parts = step_parts(float(m.step_time_s), _number(m.sync_time_s), float(modelled.step_time_s),
                           _number(modelled.sync_time_s), _number(getattr(m, "sync_wait_s", None)), tolerance,
                           _number(modelled.get("wait_s")))
        parts += part_misses(m._asdict(), modelled.to_dict(), float(m.step_time_s), tolerance)
        rows.append({"kind": "step", "strategy": m.strategy, "mode": m.mode, "ranks": m.ranks,
                     "bytes": m.bytes, "local_batch": m.local_batch, "other_load_cores": other,
                     **judge(cal.in_step(), m.strategy, m.ranks, m.bytes, float(m.step_time_s),
                             float(modelled.step_time_s), spread, options, other, parts, tolerance),
                     "parts": parts_text(m._asdict(), modelled.to_dict())})
    return rows


def part_misses(measured: dict, modelled: dict, step_s: float, tolerance: float) -> list[tuple[str, str]]:
    """Each part of the step (``costmodel.STEP_PARTS``) whose model misses it by more than
    ``tolerance`` of the part and by more than half the tolerance of the whole step: the
    parts that can explain a step's miss, named ``part_<name>``."""
    found = []
    for part in costmodel.STEP_PARTS:
        if part not in measured or part not in modelled:
            continue
        got, want = _number(measured.get(part)), _number(modelled.get(part))
        if step_s > 0 and abs(want - got) > tolerance * max(got, 1e-12) and abs(want - got) / step_s > tolerance / 2:
            found.append((f"part_{part[:-2]}", f"{part[:-2]} {got * 1e3:.3g} ms measured against {want * 1e3:.3g} ms "
                                               f"modelled ({abs(want - got) / step_s:.0%} of the step)"))
    return found


NEGLIGIBLE_PART_S = 1e-6  # a part under a microsecond either side (a commit without agreement) is not shown


def parts_text(measured: dict, modelled: dict) -> str:
    """Each part of the step measured / modelled in ms with the model's error
    (``costmodel.STEP_PARTS``); a part either side lacks is left out."""
    shown = []
    for part in costmodel.STEP_PARTS:
        got, want = _number(measured.get(part)), _number(modelled.get(part))
        if part not in measured or part not in modelled or max(got, want) < NEGLIGIBLE_PART_S:
            continue
        error = f"{(want - got) / got:+.0%}" if got > 0 else "n/a"
        shown.append(f"{part[:-2]} {got * 1e3:.3g}/{want * 1e3:.3g} ms ({error})")
    return "; ".join(shown)


def _number(value) -> float:
    value = pd.to_numeric(value, errors="coerce")
    return 0.0 if pd.isna(value) else float(value)


def run_load(cal: Calibration, scaling: pd.DataFrame | None) -> float | None:
    """Cores other processes kept busy during this run's calibration and scaling (the larger)."""
    seen = [cal.other_load_cores] if cal.other_load_cores is not None else []
    if scaling is not None and "other_load_cores" in scaling.columns:
        loads = pd.to_numeric(scaling.other_load_cores, errors="coerce").dropna()
        seen += [float(loads.median())] if len(loads) else []
    return max(seen) if seen else None


def compare_collectives(cal: Calibration, bench: pd.DataFrame, options: dict,
                        other_cores: float | None = None) -> list[dict]:
    """One row per measured bench row with a modelled twin (same strategy, ranks, bytes).

    The benchmark itself does not measure the host's load; ``other_cores`` is
    the load seen during the same run (see :func:`run_load`)."""
    if bench is None or bench.empty:
        return []
    keys = ["strategy", "ranks", "bytes"]
    model = bench[bench.tag == "modelled"].drop_duplicates(keys).set_index(keys)
    rows = []
    for m in bench[bench.tag == "measured"].itertuples(index=False):
        key = (m.strategy, m.ranks, m.bytes)
        if key not in model.index or not m.time_max_s:
            continue
        # The measured figure is time_max_s, as bench.py reports it: each iteration lasts
        # as long as its slowest rank. Slowest over fastest rank is the straggler spread.
        low = float(m.time_min_s) if m.time_min_s else None
        spread = float(m.time_max_s) / low if low else None
        rows.append({"kind": "collective", "strategy": m.strategy, "mode": "", "ranks": m.ranks,
                     "bytes": m.bytes, "local_batch": "", "other_load_cores": other_cores,
                     **judge(cal, m.strategy, int(m.ranks), float(m.bytes), float(m.time_max_s),
                             float(model.loc[key, "time_max_s"]), spread, options, other_cores),
                     "parts": "band " + costmodel.band_of(cal, m.strategy, int(m.ranks), float(m.bytes), options)})
    return rows


def modelled_bench_rows(cal: Calibration, bench: pd.DataFrame, options: dict) -> list[dict]:
    """The model's bench row for every measured (strategy, ranks, bytes) without one yet."""
    if bench is None or bench.empty:
        return []
    keys = ["strategy", "ranks", "bytes"]
    have = set(map(tuple, bench[bench.tag == "modelled"][keys].itertuples(index=False)))
    rows = []
    measured = bench[bench.tag == "measured"].drop_duplicates(keys, keep="last")
    for strategy, ranks, nbytes, measured_s in measured[keys + ["time_max_s"]].itertuples(index=False):
        if (strategy, ranks, nbytes) in have:
            continue
        try:
            t = costmodel.sync_s(cal, strategy, int(ranks), float(nbytes), options)
        except ValueError:
            continue  # a strategy the model does not know: compared nowhere
        algbw, busbw = costmodel.bandwidths_gbps(strategy, int(ranks), float(nbytes), t)
        rows.append({"strategy": strategy, "ranks": int(ranks), "bytes": int(nbytes), "iterations": "",
                     "time_min_s": t, "time_avg_s": t, "time_max_s": t, "algbw_gbps": algbw,
                     "busbw_gbps": busbw, "errors": "", "tag": "modelled",
                     "model_ratio": float(measured_s) / t if t > 0 and measured_s else None,
                     "note": "model band " + costmodel.band_of(cal, strategy, int(ranks), float(nbytes), options)})
    return rows


def comparison_frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
