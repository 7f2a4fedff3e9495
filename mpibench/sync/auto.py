"""``auto``: per bucket size and p, the algorithm this run measures fastest.

MPICH and Open MPI's tuned component switch all-reduce algorithms by message
size and communicator size: recursive doubling while latency dominates,
Rabenseifner's halving/doubling once bandwidth does. ``auto`` makes the same
switch from this run's own figures rather than a fixed table:

* by default, on the first reduction of a buffer, it takes the recorded choice
  for each width the buffer needs (:mod:`.auto_choices`: what the first timing on
  this machine chose, so runs and replays choose alike); where nothing is
  recorded it times each candidate on a scratch bucket of that width, as the
  benchmarks time a call
  (buffer written just before, ranks starting together, median over a few calls
  of the slowest rank's time; every rank gathers the same figures, so every
  rank decides alike). Timing the real
  calls sees what an alpha-beta-gamma line cannot: with the PyPI Open MPI at
  p = 2, one 64 KiB message took about twice two 32 KiB ones (a protocol
  switch), so the model picked ``rd`` where it was 2.4x slower than
  ``rabenseifner``;
* with ``options["calibration"]`` (a :class:`mpibench.results.calibration.Calibration`
  or its ``as_dict()``), from the candidates' alpha-beta-gamma costs (their
  ``cost_s``) instead: deterministic, for tests and what-if questions.

A buffer has at most two bucket sizes (full buckets and the tail), so at
most two candidates run, each on its own contiguous view; their pieces are
reported by global offset. The choice is recorded per reduction in
``Reduction.algorithm`` (``auto:rd``, ``auto:rabenseifner+rd``), which the
worker writes to the ``algorithm`` column of ``steps.csv`` and to its history.
Every rank uses the lowest rank's reading of the record, so a record written
meanwhile by another job cannot split a run's choice.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mpibench.base import stats
from . import auto_choices
from .base import Reduction, SyncStrategy
from .rabenseifner import Rabenseifner
from .rd import RecursiveDoubling
from .ring import DEFAULT_BUCKET_BYTES

CANDIDATES = (RecursiveDoubling, Rabenseifner)


@dataclass(frozen=True)
class LinkCosts:
    """The alpha-beta-gamma figures the choice is made with (duck-types ``Calibration``)."""

    alpha_s: float
    beta_s_per_byte: float
    gamma_cache_s_per_byte: float
    gamma_memory_s_per_byte: float
    call_overhead_s: float = 0.0
    source: str = "measured"

    def gamma_s_per_byte(self, nbytes: float) -> float:
        return self.gamma_cache_s_per_byte if nbytes <= 1 << 20 else self.gamma_memory_s_per_byte

    @classmethod
    def from_option(cls, value) -> "LinkCosts":
        data = value if isinstance(value, dict) else value.as_dict()
        return cls(float(data["alpha_s"]), float(data["beta_s_per_byte"]),
                   float(data["gamma_cache_s_per_byte"]), float(data["gamma_memory_s_per_byte"]),
                   float(data.get("call_overhead_s") or 0.0), "calibration")


def choose(costs, p: int, bucket_bytes: float) -> type[SyncStrategy]:
    """The candidate with the lowest modelled time for one bucket (first wins a tie)."""
    return min(CANDIDATES, key=lambda cls: cls.cost_s(costs, p, bucket_bytes, {}))


TRIAL_CALLS = 5  # timed calls per candidate and width, after one untimed


def timed_choice(comm, backend, candidates: dict, width: int, dtype=np.float32) -> type[SyncStrategy]:
    """The candidate with the lowest median time for one reduction of a ``width``-element
    scratch bucket, as the benchmarks time a call: the buffer written just before (as a
    step's pack writes it), every rank starting together, the call lasting until its
    slowest rank is done. Every rank gathers the same figures, so every rank picks alike.

    Timed without the write (or back to back), one 64 KiB exchange looked cheaper than
    two 32 KiB ones, while after a write it took 2.5x as long. Collective over ``comm``;
    the scratch values are never used. The untimed first call builds the candidate's plan
    for the scratch buffer."""
    scratch, source = backend.zeros(width, dtype=dtype), backend.zeros(width, dtype=dtype)
    mark, marks = np.zeros(1), np.zeros(comm.size)
    times = np.zeros((len(CANDIDATES), TRIAL_CALLS))
    for i, cls in enumerate(CANDIDATES):
        for call in range(-1, TRIAL_CALLS):
            backend.accumulate(scratch, source)
            backend.synchronize()
            comm.allgather(mark, marks)  # start together: no rank's clock runs while it waits
            start = time.perf_counter()
            candidates[cls].reduce(scratch)
            backend.synchronize()
            if call >= 0:
                times[i, call] = time.perf_counter() - start
    every = np.zeros(comm.size * times.size)
    comm.allgather(times.ravel(), every)
    per_call = every.reshape(comm.size, *times.shape).max(axis=0)  # the slowest rank's time
    return CANDIDATES[int(np.argmin(stats.median(per_call, axis=1)))]


@dataclass(frozen=True)
class _Plan:
    """One buffer's runs ``(start, view, candidate)``, its label and, for one run, its Reduction."""

    buf: object
    runs: list
    label: str
    whole: Reduction | None


class Auto(SyncStrategy):
    name = "auto"
    summary = "per bucket size and p, rd or rabenseifner, whichever this run times faster"
    option_names = ("bucket_bytes", "calibration")
    cost_assumption = "auto: the cheaper of rd and rabenseifner per bucket"

    @staticmethod
    def modelled_as(nbytes: float) -> tuple[str, ...]:
        return tuple(cls.name for cls in CANDIDATES)  # the faster, as it finds by timing them
    in_main_job = True
    records_choices = True

    def __init__(self, comm, backend, n_params, options=None):
        super().__init__(comm, backend, n_params, options)
        bucket_bytes = int(self.options.get("bucket_bytes") or DEFAULT_BUCKET_BYTES)
        self.bucket_elems = max(1, bucket_bytes // self.buffer.dtype.itemsize)
        given = self.options.get("calibration")
        self.costs: LinkCosts | None = LinkCosts.from_option(given) if given else None
        # The candidates reduce views of the caller's buffer: they need no step buffer of their own.
        self._candidates = {cls: cls(comm, backend, 0, self.options) for cls in CANDIDATES}
        self._plan: _Plan | None = None

    def plan_for(self, buf) -> "_Plan":
        """The views of ``buf`` and the candidate chosen for each (cached per buffer)."""
        if self._plan is None or self._plan.buf is not buf:
            full = len(buf) // self.bucket_elems * self.bucket_elems
            parts = [(0, full, self.bucket_elems), (full, len(buf), len(buf) - full)]
            chosen = [(start, end, self._choose(width, buf.dtype)) for start, end, width in parts if end > start]
            if len({cls for _, _, cls in chosen}) == 1:
                chosen = [(0, len(buf), chosen[0][2])]  # one algorithm: one call on the whole buffer
            runs = [(start, buf[start:end], self._candidates[cls]) for start, end, cls in chosen]
            label = "auto:" + ("+".join(s.name for _, _, s in runs) or "none")
            whole = None
            if len(runs) == 1:  # the candidate's pieces are the buffer's: one Reduction serves every call
                runs = [(0, buf, runs[0][2])]
                whole = Reduction(self.comm.worker_ids, runs[0][2].compiled_for(buf).pieces, len(buf), label)
            self._plan = _Plan(buf, runs, label, whole)
        return self._plan

    def _choose(self, width: int, dtype) -> type[SyncStrategy]:
        if self.costs is not None:
            return choose(self.costs, self.comm.size, width * np.dtype(dtype).itemsize)
        entry = auto_choices.key(self.comm.size, width, dtype)
        index = {cls.name: i for i, cls in enumerate(CANDIDATES)}
        mine = np.array([float(index.get(auto_choices.lookup(entry), -1))])
        every = np.zeros(self.comm.size)
        self.comm.allgather(mine, every)  # collective: every rank takes the lowest rank's reading
        if every[0] >= 0:
            return CANDIDATES[int(every[0])]
        chosen = timed_choice(self.comm, self.backend, self._candidates, width, dtype)
        if self.comm.rank == 0:
            auto_choices.store(entry, chosen.name)
        return chosen

    def reduce(self, buf) -> Reduction:
        plan = self.plan_for(buf)
        if plan.whole is not None:
            plan.runs[0][2].reduce(buf)
            return plan.whole
        pieces = []
        for start, view, strategy in plan.runs:
            done = strategy.reduce(view)
            pieces += [(start + offset, length) for offset, length in done.pieces]
        return Reduction(self.comm.worker_ids, pieces, len(buf), plan.label)

    def close(self) -> None:
        for strategy in self._candidates.values():
            strategy.close()

    @staticmethod
    def cost_s(cal, p: int, nbytes: float, options: dict | None = None) -> float:
        """The cheaper candidate's modelled time (what auto aims to achieve)."""
        return min(cls.cost_s(cal, p, nbytes, options) for cls in CANDIDATES)
