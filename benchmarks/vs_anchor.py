"""``bench``'s baselines against an independent anchor, in the same interleaved rounds.

    python benchmarks/vs_anchor.py [--anchor PATH] [--ranks 2] [--sizes 4K,...,64M] [--rounds 5]

Not under mpirun: it launches one ``bench`` job (``MPIBENCH_MPIEXEC``, else
``mpirun``) with ``--strategies c_floor --anchor PATH``, so the anchor runs as its
own job, launched by rank 0 in every round at every size while the benchmark's
ranks sleep. The anchor is ``--anchor`` (an IMB-MPI1 or osu_allreduce binary you
built against the same MPI), else the project's own stand-alone C program
(``mpibench/job/bench/c_anchor.c``, osu_allreduce's method), built here with the
MPI's ``mpicc``. Printed per size: each one's ``t_avg`` (median over rounds of
the mean over ranks of the mean call time), ``blocking`` and ``c_floor`` over the
anchor, and whether both are within ``--tolerance`` (10 %); the host's load
before and after. Exit 0 when every size is within, 1 when one is not, 3 when
the job could not run.
"""
from __future__ import annotations

import argparse
import csv
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

SIZES = "4K,8K,16K,32K,64K,128K,256K,512K,1M,2M,4M,8M,16M,32M,64M"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def own_anchor() -> str:
    from mpibench.job.bench import cfloor

    mpicc = cfloor.find_mpicc()
    if mpicc is None:
        sys.exit("vs_anchor: no mpicc beside this Python or on PATH to build c_anchor.c; give --anchor")
    return str(cfloor.build(mpicc, cfloor.ANCHOR_SOURCE))


def run_bench(args, anchor: str, out: str) -> int:
    from mpibench.drive.launch import job_env, launcher_argv

    cmd = [*launcher_argv(args.mpiexec), "-n", str(args.ranks), sys.executable, "-m", "mpibench", "bench",
           "--sizes", args.sizes, "--strategies", "c_floor", "--anchor", anchor, "--rounds", str(args.rounds),
           "--iterations", str(args.iterations), "--warmup", str(args.warmup), "--no-model", "--out", out, "--force"]
    print(f"# {shlex.join(cmd)}", flush=True)
    env = job_env()
    env.setdefault("MPIBENCH_MPIEXEC", shlex.join(launcher_argv(args.mpiexec)))  # the anchor's launcher
    done = subprocess.run(cmd, stdin=subprocess.DEVNULL, env=env, timeout=args.timeout, text=True,
                          capture_output=True)
    if done.returncode != 0:
        print(done.stdout[-2000:] + done.stderr[-2000:], file=sys.stderr)
    return done.returncode


def table(out: str, tolerance: float) -> tuple[list[str], bool]:
    with open(os.path.join(out, "bench.csv"), newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["tag"] == "measured"]
    by = {(r["strategy"], int(r["bytes"])): float(r["time_avg_s"]) for r in rows}
    from mpibench.base.units import human_bytes

    lines = [f"{'size':>8} {'anchor us':>10} {'blocking us':>11} {'c_floor us':>10} "
             f"{'blocking/anchor':>15} {'c_floor/anchor':>14}  within ±{tolerance:.0%}"]
    ok = True
    for n in sorted({b for _, b in by}):
        anchor, blocking, floor = by.get(("anchor", n)), by.get(("blocking", n)), by.get(("c_floor", n))
        if not anchor or blocking is None or floor is None:
            lines.append(f"{human_bytes(n):>8}  missing a row (anchor {anchor}, blocking {blocking}, c_floor {floor})")
            ok = False
            continue
        ratios = (blocking / anchor, floor / anchor)
        within = all(abs(r - 1) <= tolerance for r in ratios)
        ok &= within
        lines.append(f"{human_bytes(n):>8} {anchor * 1e6:10.1f} {blocking * 1e6:11.1f} {floor * 1e6:10.1f} "
                     f"{ratios[0]:15.2f} {ratios[1]:14.2f}  {'yes' if within else 'NO'}")
    return lines, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchor", default=None, help="IMB-MPI1 or osu_allreduce binary (default: c_anchor.c)")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=50, help="timed calls per round, every size")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--mpiexec", default=None, help="launcher (default: $MPIBENCH_MPIEXEC, else mpirun)")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", default=None, help="keep bench.csv in this folder")
    args = parser.parse_args()
    anchor = args.anchor or own_anchor()
    before = load()
    with tempfile.TemporaryDirectory(prefix="vs-anchor-") as tmp:
        out = args.out or tmp
        code = run_bench(args, anchor, out)
        if code != 0:
            print(f"vs_anchor: the bench job exited {code}: could not run", file=sys.stderr)
            return 3
        lines, ok = table(out, args.tolerance)
    print(f"# p={args.ranks}  anchor {anchor}  {args.rounds} interleaved rounds x {args.iterations} calls  "
          f"load before {before}, after {load()}")
    print("\n".join(lines))
    print(f"# {'every size within' if ok else 'NOT every size within'} ±{args.tolerance:.0%} of the anchor")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
