"""Calibration: the machine parameters the cost model needs, measured in the same run.

Each figure is stored with a sentence saying how it was measured (``HOW``):

* alpha (s) and beta (s/byte): ping-pong between ranks 0 and 1 through the
  same deadline-bounded buffer calls the strategies use
  (:class:`mpibench.sync.comm.Comm`), fitted to ``t(n) = alpha + n * beta``,
  back to back (for collective benchmarks); for training steps, a simultaneous
  exchange with both ranks computing a local step before each (:mod:`.exchange`),
  fitted as one line and by size band;
* gamma (s/byte): local reduction throughput, ``dst += src`` on float32, once
  on a cache-sized and once on a memory-sized buffer;
* compute: one worker's local part of a step (gather the batch, forward and
  backward pass, pack the step buffer, apply the update) at two batch sizes,
  fitted to ``fixed + per_sample * b``; the software cost of one collective
  call on a one-rank communicator; and the worker loop's own per-step cost;
* the CPUs the ranks of the busiest host may use together versus its ranks, and how many cores
  other processes kept busy while all this was measured.

Ranks not taking part in a measurement sleep on a non-blocking barrier, so the
measuring ranks have the cores to themselves (as far as the host allows).
BLAS is held to one thread per rank: the model assumes one core per rank.
"""
from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from mpibench.base import stats
from mpibench.results.calibration import Calibration
from mpibench.sync.comm import Comm

from .calibrate_bands import MORE_HOW, more_figures
from .hostload import HostLoad, busiest, host_cores
from .exchange import EXCHANGE_SIZES_BYTES, EXCHANGE_SPLITS_BYTES, exchange
from .pingpong import PING_SIZES_BYTES, ping_pong
from .timing import blas_one_thread, fit_alpha_beta, fit_bands, fit_line, idle_until_released

GAMMA_CACHE_BYTES = 64 << 10
GAMMA_MEMORY_BYTES = 16 << 20


# ----------------------------------------------------------------------------- gamma
def reduction_s_per_byte(nbytes: int, repeats: int = 0) -> float:
    """Median time per byte of ``dst += src`` on float32 buffers of ``nbytes``."""
    n = nbytes // 4
    dst, src = np.ones(n, np.float32), np.full(n, 0.5, np.float32)
    repeats = repeats or max(5, min(200, (64 << 20) // nbytes))
    times = np.empty(repeats)
    np.add(dst, src, out=dst)
    for i in range(repeats):
        start = time.perf_counter()
        np.add(dst, src, out=dst)
        times[i] = time.perf_counter() - start
    return stats.median(times) / nbytes


# ----------------------------------------------------------------------------- compute
def local_step_s(config, batch: int, repeats: int = 30) -> float:
    """Median time of one worker's local work in a step at local batch ``batch``."""
    return float(medians_in_turns([local_step(config, batch)], repeats)[0])


def medians_in_turns(works, repeats: int, warmup: int = 3) -> np.ndarray:
    """Each of ``works``' median time over ``repeats`` calls, the works taking turns, one
    call each, after ``warmup`` untimed turns: a change in the host's speed hits them alike."""
    times = np.empty((len(works), repeats))
    for i in range(-warmup, repeats):
        for j, work in enumerate(works):
            start = time.perf_counter()
            work()
            if i >= 0:
                times[j, i] = time.perf_counter() - start
    return stats.median(times, axis=1)


def local_step(config, batch: int):
    """A closure doing one worker's local part of a step (no communication)."""
    from mpibench.base import seeds
    from mpibench.engine.data import make_dataset
    from mpibench.kernels import NumpyBackend
    from mpibench.engine.model import MLP, Shapes, init_params

    shapes = Shapes(config.features, config.hidden, config.classes)
    data = make_dataset(config.seed, max(config.samples, batch), config.features, config.classes)
    model, backend = MLP(shapes), NumpyBackend()
    params = init_params(config.seed, shapes)
    buffer = backend.zeros(shapes.n_params + 1)
    # A shuffled batch, as the shard walker hands out: the gather is part of the cost.
    index = seeds.generator(config.seed, seeds.BENCH, 1).permutation(len(data.labels))[:batch]

    def work() -> None:
        grad, count, _ = model.loss_and_grad_sum(params, data.features[index], data.labels[index])
        backend.pack(buffer, grad, count)
        backend.apply_update(params, buffer[:-1], buffer[-1], 0.0)
    return work


def call_overhead_s(n_floats: int, repeats: int = 200) -> float:
    """Median time of one collective call on a one-rank communicator: the software cost
    a step pays for each collective even when there is nobody to talk to."""
    comm = Comm(MPI.COMM_SELF, deadline_s=30.0)
    src, dst = np.ones(n_floats, np.float32), np.empty(n_floats, np.float32)
    times = np.empty(repeats)
    for i in range(-5, repeats):
        start = time.perf_counter()
        comm.allreduce(src, dst)
        if i >= 0:
            times[i] = time.perf_counter() - start
    return stats.median(times)


def compute_fit(config, batches=(8, 256), repeats: int = 30) -> tuple[float, float]:
    """(fixed, per-sample) seconds of a local step, from two batch sizes.

    The sizes take turns, one step each, and each keeps the median of its own
    steps: timed one after the other, a change in the host's load between the
    two blocks was seen to make the small batch the slower and the slope zero."""
    return fit_line(batches, medians_in_turns([local_step(config, b) for b in batches], repeats))


# ----------------------------------------------------------------------------- all of it
LOOP_BATCH, LOOP_STEPS, LOOP_WARMUP = 8, 12, 2  # the scaling plan's steps and warm-up
LOOP_REPEATS = 3


def one_rank_step_s(run, config, batch: int, strategy: str | None = None, repeats: int = LOOP_REPEATS,
                    parts: list | None = None) -> float:
    """Step time of the real worker loop (``run``, the runner's ``run_scenario``) on
    MPI.COMM_SELF at local batch ``batch``.

    Exactly what a scaling point at p = 1 times: the same loop, strategy, steps
    and warm-up (the step timer covers compute, the sync with pack and apply,
    the loss statistics and the evidence gather). The loop runs ``repeats``
    times on fresh trainers and the median of their medians is kept: one run
    of a dozen steps was seen to differ from the next by 1.7x on a busy host.
    """
    from dataclasses import replace

    from mpibench.kernels import NumpyBackend

    from .memrecords import MemoryRecords

    loop = replace(config, batch_size=batch, steps=LOOP_STEPS, check_every=10 ** 6, scenario="none",
                   strategy=strategy or config.strategy)
    medians = []
    for _ in range(repeats):
        records = MemoryRecords()
        run(loop, MPI.COMM_SELF, records, NumpyBackend())
        medians.append(stats.median([r["step_time_s"] for r in records.steps.rows[LOOP_WARMUP:]]))
        if parts is not None:  # each step's parts after the warm-up (engine.steprecord.PART_NAMES)
            parts.extend(records.own_parts[LOOP_WARMUP:])
    return stats.median(medians)


def loop_overhead_s(run, config, call_s: float) -> float:
    """The worker loop's own per-step cost (bookkeeping, marks, records) on one rank:
    the loop's step time at a tiny batch less the local work of that batch and the
    two collective calls (gradient, loss statistics)."""
    return max(one_rank_step_s(run, config, LOOP_BATCH) - local_step_s(config, LOOP_BATCH) - 2 * call_s, 0.0)


def one_rank_table(run, config, batches, strategies) -> tuple[dict, dict]:
    """(``"batch"`` -> median over strategies, ``"strategy:batch"`` -> one-rank step time)."""
    by_batch, by_strategy = {}, {}
    for b in sorted(set(batches)):
        per = {name: one_rank_step_s(run, config, b, name) for name in (strategies or [config.strategy])}
        by_strategy.update({f"{name}:{b}": t for name, t in per.items()})
        by_batch[str(b)] = stats.median(list(per.values()))
    return by_batch, by_strategy


def local_figures(run, config, batches=(), strategies=()) -> tuple:
    """gamma (cache, memory), compute (fixed, per sample), call and loop overheads, and
    the one-rank step time at each of ``batches`` under each of ``strategies``, on this rank."""
    overhead = call_overhead_s(config.features * config.hidden + config.hidden * config.classes)
    with blas_one_thread():
        fixed, per_sample = compute_fit(config)
        loop = loop_overhead_s(run, config, overhead)
        one_rank = one_rank_table(run, config, batches, strategies)
    return (reduction_s_per_byte(GAMMA_CACHE_BYTES), reduction_s_per_byte(GAMMA_MEMORY_BYTES),
            fixed, per_sample, overhead, loop, one_rank)


def calibrate(world: MPI.Comm, run, config, batches=(), strategies=()) -> Calibration:
    """Measure every figure (collective: every rank of ``world`` calls it).

    ``batches``: the local batch sizes the model will be asked about; the worker
    loop's step time on one rank is measured at each (compute does not scale
    linearly with the batch once activations leave the caches)."""
    load = HostLoad(world)
    pings = ping_pong(world)
    with blas_one_thread():
        step_exchanges = exchange(world, local_step(config, config.batch_size))
    local = local_figures(run, config, batches, strategies) if world.Get_rank() == 0 else None
    idle_until_released(world)  # the others sleep while rank 0 measures alone
    gamma_cache, gamma_memory, fixed, per_sample, overhead, loop, (one_rank, by_strategy) = world.bcast(local, root=0)
    crowd = busiest(host_cores(world))
    other_cores = load.other_cores()
    alpha, beta = fit_alpha_beta(pings) if pings else (0.0, 0.0)
    alpha_step, beta_step = fit_alpha_beta(step_exchanges) if step_exchanges else (0.0, 0.0)
    step_split, step_bands = fit_bands(step_exchanges, EXCHANGE_SPLITS_BYTES) if step_exchanges else (None, [])
    more = more_figures(world, ping_pong)
    return Calibration(**more,
        alpha_s=alpha, beta_s_per_byte=beta,
        gamma_cache_s_per_byte=gamma_cache, gamma_memory_s_per_byte=gamma_memory,
        compute_fixed_s=fixed, compute_per_sample_s=per_sample, call_overhead_s=overhead,
        loop_overhead_s=loop, one_rank_step_s=one_rank, one_rank_step_by_strategy_s=by_strategy,
        cores=crowd.cores, ranks_on_host=crowd.ranks, ranks=world.Get_size(),
        shapes={"features": config.features, "hidden": config.hidden, "classes": config.classes},
        alpha_step_s=alpha_step, beta_step_s_per_byte=beta_step, other_load_cores=other_cores,
        step_bands=step_bands, step_band_split_bytes=step_split,
        how=HOW, ping_pong=[list(p) for p in pings], exchange_step=[list(p) for p in step_exchanges])


def calibrate_collectives(world: MPI.Comm) -> Calibration:
    """The figures a collective benchmark's model needs, and nothing else (collective).

    Ping-pong (alpha, beta), reduction throughput (gamma) and the one-rank
    call overhead; the compute figures stay zero, since ``bench`` models no
    training step. Takes about a second."""
    load = HostLoad(world)
    pings = ping_pong(world)
    local = None
    if world.Get_rank() == 0:
        local = (reduction_s_per_byte(GAMMA_CACHE_BYTES), reduction_s_per_byte(GAMMA_MEMORY_BYTES),
                 call_overhead_s(1024))
    idle_until_released(world)
    gamma_cache, gamma_memory, overhead = world.bcast(local, root=0)
    crowd = busiest(host_cores(world))
    alpha, beta = fit_alpha_beta(pings) if pings else (0.0, 0.0)
    more = more_figures(world, ping_pong)
    how = {k: v for k, v in HOW.items() if k in ("alpha_s", "beta_s_per_byte", "gamma_cache_s_per_byte",
                                                 "gamma_memory_s_per_byte", "cores", "ranks_on_host",
                                                 "other_load_cores")}
    how.update(MORE_HOW)
    how["call_overhead_s"] = ("median time of one Allreduce of 1024 float32 on a one-rank communicator "
                              "(MPI.COMM_SELF through mpibench.sync.comm.Comm) on rank 0")
    return Calibration(
        **more, alpha_s=alpha, beta_s_per_byte=beta, gamma_cache_s_per_byte=gamma_cache,
        gamma_memory_s_per_byte=gamma_memory, compute_fixed_s=0.0, compute_per_sample_s=0.0,
        call_overhead_s=overhead, cores=crowd.cores, ranks_on_host=crowd.ranks,
        ranks=world.Get_size(), other_load_cores=load.other_cores(), how=how,
        ping_pong=[list(p) for p in pings])


HOW = {
    "alpha_s": "ping-pong between ranks 0 and 1 (mpibench.sync.comm.Comm send/recv, other ranks asleep) over "
               + ", ".join(str(s) for s in PING_SIZES_BYTES) + " bytes; median half round trip per size; "
               "the fitted line's value at 0 bytes, the line anchored at the smallest size",
    "beta_s_per_byte": "least-squares slope of the half round trip against "
                       "size, anchored at the smallest size (seconds per byte)",
    "alpha_step_s": "ranks 0 and 1 each send and receive n bytes at once (Comm isend and irecv, one wait), "
                    "both having run one local step's computation (the scaling model, BLAS on one thread) "
                    "first, untimed, and rank 1 then says it is ready (untimed): rank 0 times the exchange "
                    "from then; over " + ", ".join(str(s) for s in EXCHANGE_SIZES_BYTES) + " bytes, median "
                    "per size, fitted as alpha_s is",
    "beta_step_s_per_byte": "slope of that fit",
    "step_bands": "the same exchanges split into two bands at the size among "
                  + ", ".join(str(s) for s in EXCHANGE_SPLITS_BYTES) + " that fits best, as for bands: "
                  "[upper bytes (null: no bound), alpha s, beta s/byte]; a training step's messages take "
                  "their alpha and beta from these",
    "step_band_split_bytes": "the split chosen (null: one line fitted best)",
    "gamma_cache_s_per_byte": f"median time of float32 dst += src on {GAMMA_CACHE_BYTES} bytes on rank 0, "
                              "per byte",
    "gamma_memory_s_per_byte": f"the same on {GAMMA_MEMORY_BYTES} bytes (beyond the caches)",
    "compute_fixed_s": "one worker's local step (batch gather, forward+backward, pack, apply) timed at "
                       "batch 8 and 256 on rank 0 with BLAS on one thread; intercept of the line",
    "compute_per_sample_s": "slope of the same line (seconds per sample)",
    "call_overhead_s": "median time of one Allreduce of the model's gradient on a one-rank communicator "
                       "(MPI.COMM_SELF through mpibench.sync.comm.Comm) on rank 0",
    "loop_overhead_s": f"the worker loop (mpibench.job.runner.run_scenario) on MPI.COMM_SELF, batch {LOOP_BATCH}, "
                       f"{LOOP_STEPS} steps: median step time after {LOOP_WARMUP} less the local step of that "
                       "batch and two collective call overheads",
    "one_rank_step_s": "per local batch, the median over strategies of one_rank_step_by_strategy_s",
    "one_rank_step_by_strategy_s": f"per strategy and local batch: the worker loop on MPI.COMM_SELF (rank 0 "
                                   f"alone, BLAS on one thread), {LOOP_STEPS} steps, median step time after "
                                   f"{LOOP_WARMUP} (as a scaling point), median of {LOOP_REPEATS} such runs",
    "cores": "CPUs in the union of the affinity masks (os.sched_getaffinity) of the ranks on the "
             "busiest host (most ranks beyond its CPUs), gathered from every rank",
    "ranks_on_host": "ranks of the job on that host",
    "other_load_cores": "cores kept busy by other processes while calibrating: the host's busy CPU "
                        "time (/proc/stat) minus this job's own, over the wall time",
    **MORE_HOW,
}
