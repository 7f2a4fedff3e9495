"""A scaling point's step, part by part, from every rank's own step records.

Every rank keeps, per committed step, its compute, sync, commit, evidence and
check seconds (:mod:`mpibench.engine.steprecord`). Gathered at the end of the
point (untimed), they split the step into:

* ``compute_s``, ``evidence_s``, ``check_s``: the first member's (it writes the step
  records, so it is the busiest rank; a point keeps no history, so its evidence is only
  the check that there is none);
* ``reduction_s``: per step, the shortest sync over the ranks: the last rank to
  arrive waits for nobody, so its sync is the strategy's own messages;
* ``commit_s``: per step, the shortest commit agreement over the ranks, likewise;
* ``wait_s``: per step, the longest time any rank spent in the sync and the
  agreement beyond those two: the wait for the last rank;
* ``skew_s``: what the measured parts predict for that wait: per step, the
  spread over the ranks of the work outside the collectives (compute +
  evidence + check); the model's own wait comes from the one-rank loops run at
  once beside the point instead (:func:`one_rank_parts`).

Each is the median over the point's steps after the warm-up.
"""
from __future__ import annotations

import numpy as np

from mpibench.base import stats
from mpibench.engine.steprecord import PART_NAMES

MEASURED_PARTS = ("compute_s", "reduction_s", "commit_s", "evidence_s", "check_s", "wait_s")
PART_COLUMNS = MEASURED_PARTS + ("skew_s",)
_COMPUTE, _SYNC, _COMMIT, _EVIDENCE, _CHECK = (PART_NAMES.index(n) for n in
                                               ("compute_s", "sync_time_s", "commit_s", "evidence_s",
                                                "check_time_s"))


def split(tables: list, warmup: int) -> dict:
    """``tables``: per rank, in rank order, its rows of ``PART_NAMES`` for the same committed
    steps. Returns the parts above (empty when no rank recorded a step)."""
    known = [np.asarray(t, dtype=np.float64).reshape(-1, len(PART_NAMES)) for t in tables if t is not None]
    steps = min((len(t) for t in known), default=0)
    if steps == 0:
        return {}
    stack = np.stack([t[:steps] for t in known])  # ranks x steps x parts
    if steps > warmup:
        stack = stack[:, warmup:]
    sync, commit = stack[..., _SYNC], stack[..., _COMMIT]
    reduction, agreement = sync.min(axis=0), commit.min(axis=0)
    busy = stack[..., _COMPUTE] + stack[..., _EVIDENCE] + stack[..., _CHECK]
    first = stack[0]
    waited = (sync - reduction) + (commit - agreement)  # differences first: exactly 0 for the last rank
    return {"compute_s": _median(first[:, _COMPUTE]), "reduction_s": _median(reduction),
            "commit_s": _median(agreement), "evidence_s": _median(first[:, _EVIDENCE]),
            "check_s": _median(first[:, _CHECK]), "wait_s": _median(waited.max(axis=0)),
            "skew_s": _median(busy.max(axis=0) - busy.min(axis=0))}


BESIDE = ("compute_s", "reduction_s", "evidence_s", "check_s", "wait_s")


def one_rank_parts(tables: list, warmup: int) -> dict:
    """The one-rank loops' own parts, medians after the warm-up. ``tables``: per rank, the
    rows of its one-rank loop, the loops run at once, the first rank's first. Compute,
    evidence, check and the sync (pack, a one-rank collective, apply: the reduction's local
    work) are the first rank's; ``wait_s`` is what the ranks' loops predict for the wait for
    the last rank: per step, the longest less the shortest local work (compute + evidence
    + check) over the ranks, the steps of each loop taken in order (zero for one rank)."""
    if not tables or not tables[0]:
        return {}
    own = split([tables[0]], warmup)
    spread = split(tables, warmup).get("skew_s", 0.0)
    return {**{k: own[k] for k in BESIDE if k != "wait_s"}, "wait_s": spread}


def _median(values) -> float:
    return stats.median(values)
