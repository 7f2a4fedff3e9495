"""Step time with no straggler, a waited-for straggler and a dropped one, side by side.

For each worker count p one mpirun job runs three trainings of the same model
in turn (``--rounds`` times, interleaved): no faults; the last worker computing ``--delay-s`` late at every
step after the first, waited for; and the same straggler dropped by a
``--deadline-s`` straggler deadline. On worker 0 it times every step from
its start (recovery and re-grouping included) to its commit and prints the
median of each mode and the ratios to the no-straggler median. Goal: the
dropped mode within 1.2x of no straggler while the waited-for one pays the
whole delay.

A step's compute is simulated as a ``--compute-s`` wait in every worker's
gradient computation (as a GPU kernel is, seen from the host): on a machine
with fewer cores than workers, CPU-bound workers slow each other down, and
how many compute at once differs between the modes, which would blur the
comparison. The redo of a step among the on-time workers reuses the
gradient, as a real backup-worker scheme does, so it does not wait again.

    python lab/studies/stragglers.py [--ranks 2,3] [--steps 12] [--rounds 3] [--compute-s 0.3]
        [--delay-s 0.6] [--deadline-s 0.03]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

MODES = ("none", "waited", "dropped")


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,3")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--compute-s", type=float, default=0.3, help="simulated compute per step")
    parser.add_argument("--delay-s", type=float, default=0.6, help="the straggler's extra delay per step")
    parser.add_argument("--deadline-s", type=float, default=0.03, help="--straggler-deadline when dropping")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--strategy", default="ring")
    parser.add_argument("--rounds", type=int, default=3, help="the three modes run in turn this many times")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def train(args, mode: str, world) -> list[float]:
    """Seconds per step (steps 2.. only: the first ones warm up), on every rank."""
    from mpibench.base.config import RunConfig
    from mpibench.faults.schedule import Delay, Schedule
    from mpibench.kernels import select_backend
    from mpibench.base.records import RunRecords
    from mpibench.job.runner import build_trainer, recoverable_dup, train_and_finish

    n = world.Get_size()
    late = tuple(range(1, args.steps))
    events = () if mode == "none" else (Delay(n - 1, late, args.delay_s, "compute"),)
    config = RunConfig(strategy=args.strategy, scenario=f"straggler-{mode}", steps=args.steps,
                       samples=args.batch_size * n * (args.steps + 1), hidden=args.hidden,
                       batch_size=args.batch_size, check_every=args.steps,
                       straggler_deadline=args.deadline_s if mode == "dropped" else 0.0)
    schedule = Schedule(config.scenario, n, events)
    trainer = build_trainer(config, schedule, recoverable_dup(world), tuple(range(n)), RunRecords(None),
                            select_backend("cpu"), n)
    times, attempt, compute = [], trainer._attempt, trainer.model.loss_and_grad_sum

    def slow_compute(*a):
        time.sleep(args.compute_s)
        return compute(*a)

    trainer.model.loss_and_grad_sum = slow_compute

    def timed(step):
        start = time.perf_counter()
        result = attempt(step)
        times.append(time.perf_counter() - start)
        return result

    trainer._attempt = timed
    summary, comm = train_and_finish(trainer)
    if summary.violations or summary.error:
        raise SystemExit(f"{mode}: {summary.violations} violation(s), {summary.error}")
    from mpibench.job.runner import free_comm

    free_comm(comm)
    return times[2:]


def inner(args) -> None:
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    times = {mode: [] for mode in MODES}
    for _ in range(args.rounds):  # interleaved, so a busy spell on the machine hits every mode
        for mode in MODES:
            world.Barrier()
            times[mode] += train(args, mode, world)
    medians = {mode: statistics.median(t) for mode, t in times.items()}
    if world.Get_rank() == 0:
        base = medians["none"]
        print(f"p={world.Get_size()} median step: none {base * 1e3:.1f} ms, "
              f"waited {medians['waited'] * 1e3:.1f} ms ({medians['waited'] / base:.2f}x), "
              f"dropped {medians['dropped'] * 1e3:.1f} ms ({medians['dropped'] / base:.2f}x); "
              f"compute {args.compute_s:g} s, delay {args.delay_s:g} s, straggler deadline {args.deadline_s:g} s; "
              f"{len(times['none'])} steps per mode", flush=True)
    from mpibench.faults.ulfm import exit_process

    exit_process(0)


def main() -> None:
    args = parse()
    if args.inner:
        return inner(args)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from mpirun import mpi_env, mpirun_command

    for p in [int(x) for x in args.ranks.split(",")]:
        cmd = ["timeout", "-k", "10", "600", *mpirun_command(), "-n", str(p), sys.executable, __file__,
               "--inner", *sys.argv[1:]]
        job = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=mpi_env())
        lines = [line for line in job.stdout.splitlines() if line.startswith("p=")]
        print("\n".join(lines) if lines else f"p={p}: no result (exit {job.returncode})\n{job.stderr[-2000:]}",
              flush=True)


if __name__ == "__main__":
    main()
