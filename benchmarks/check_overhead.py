"""Steps per second with the history and the checks versus without them.

Runs `python -m mpibench run` under mpirun, alternating "on" (every worker
writes its history; the first live member checks the case when it ends and
writes the verdict) and "off" (``MPIBENCH_HISTORY=off``: no history, nothing
checked, the run cannot be judged). Each job reports its own times measured
with ``time.perf_counter`` inside the job (the training loop and the online check of every step, whose case
verdict the verdict of record reuses), so launcher start-up is not counted. Steps are chosen so
that the loop runs at least ``--min-loop-s`` seconds. Prints every pair and
the medians:

    on_loop:    steps / loop time with history writing (what training pays)
    on_total:   steps / (loop + online check)
    off:        steps / loop time without history

    python benchmarks/check_overhead.py [--ranks 2] [--steps 1500] [--pairs 5] [--check-every 1]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from mpirun import run_mpi  # noqa: E402

LINE = re.compile(r"timing: (\d+) steps, loop ([0-9.]+) s, online check ([0-9.]+) s")


def load() -> str:
    """The host's load averages (1, 5, 15 min): figures taken on a busy host say so."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def timed_run(ranks: int, steps: int, strategy: str, history: bool, check_every: int = 1) -> dict:
    os.environ["MPIBENCH_HISTORY"] = "on" if history else "off"
    with tempfile.TemporaryDirectory() as out:
        job = run_mpi(ranks, ["run", "--strategy", strategy, "--steps", str(steps),
                              "--check-every", str(check_every)], Path(out), timeout=600)
    expected = 0 if history else 3  # without a history there is nothing to judge
    if job.returncode != expected or not LINE.search(job.stdout):
        raise SystemExit(f"run exited {job.returncode} (expected {expected}):\n{job.text[-3000:]}")
    done, loop_s, online_s = LINE.search(job.stdout).groups()
    return {"steps": int(done), "loop_s": float(loop_s), "check_s": float(online_s)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Two ranks: more than the host's cores would time the time-sharing, not the harness.
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--strategy", default="native")
    parser.add_argument("--min-loop-s", type=float, default=2.0)  # 0: exactly --steps
    parser.add_argument("--check-every", type=int, default=1,
                        help="the online check's stride (the offline verdict still judges every step)")
    args = parser.parse_args()
    steps = args.steps
    while timed_run(args.ranks, steps, args.strategy, False)["loop_s"] < args.min_loop_s:
        steps *= 2  # runs shorter than the floor measure start-up noise, not steps
    print(f"{args.ranks} ranks, {args.strategy}, {steps} steps per run, online check every {args.check_every}, "
          f"{args.pairs} interleaved pairs; "
          f"load before {load()}")
    on_loop, on_total, off = [], [], []
    for i in range(args.pairs):
        on = timed_run(args.ranks, steps, args.strategy, True, args.check_every)
        plain = timed_run(args.ranks, steps, args.strategy, False)
        on_loop.append(on["steps"] / on["loop_s"])
        on_total.append(on["steps"] / (on["loop_s"] + on["check_s"]))
        off.append(plain["steps"] / plain["loop_s"])
        print(f"pair {i + 1}: on {on_loop[-1]:.1f} steps/s in the loop ({on['loop_s']:.3f} s), "
              f"{on_total[-1]:.1f} with the checks ({on['check_s']:.3f} s); "
              f"off {off[-1]:.1f} steps/s ({plain['loop_s']:.3f} s)", flush=True)
    m_loop, m_total, m_off = (statistics.median(v) for v in (on_loop, on_total, off))
    print(f"median steps/s  off: {m_off:.1f}  on (loop): {m_loop:.1f}  on (loop + checks): {m_total:.1f}")
    print(f"cost of the history in the loop: {m_off / m_loop:.2f}x; with the checks: {m_off / m_total:.2f}x; "
          f"load after {load()}")


if __name__ == "__main__":
    main()
