"""Open MPI's single-copy path (CMA) on and off, in alternating launches, outside the harness.

    python lab/studies/single_copy_ab.py [--pairs 8] [--sizes 4K,64K,1M,4M] [--imb PATH] [--out CSV]

Not under mpirun. Each pair is two launches one right after the other, in
alternating order: one as the environment has it, one with
``OMPI_MCA_smsc=^cma`` (Open MPI's shared-memory transport then copies every
message through its own buffers instead of reading the peer's memory with
``process_vm_readv``). Each launch runs a plain mpi4py loop of blocking
``Allreduce`` (float32 sum, p = 2: no mpibench code, :data:`LOOP`), and, with
``--imb``, IMB-MPI1's ``Allreduce`` as a launch of its own. A row per launch and
size: the seconds per call (the loop: median of 3 batches of 50 ms, slowest
rank; IMB: ``t_max``). The summary is the median and range over the launches of
each setting, and the ratio of the two medians; every figure is ``measured``,
one host, launches as the unit of repetition.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

OFF = {"OMPI_MCA_smsc": "^cma"}
LOOP = r"""
import sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
for n_bytes in map(int, sys.argv[1:]):
    send = np.ones(n_bytes // 4, np.float32); recv = np.empty_like(send)
    for _ in range(5): comm.Allreduce(send, recv)
    t0 = time.perf_counter(); comm.Allreduce(send, recv); one = time.perf_counter() - t0
    calls = max(20, int(0.05 / max(comm.allreduce(one, op=MPI.MAX), 1e-7)))
    batches = []
    for _ in range(3):
        comm.Barrier(); t0 = time.perf_counter()
        for _ in range(calls): comm.Allreduce(send, recv)
        batches.append(comm.allreduce((time.perf_counter() - t0) / calls, op=MPI.MAX))
    if comm.Get_rank() == 0: print(n_bytes, sorted(batches)[1], flush=True)
"""


def run(cmd: list[str], env: dict, timeout_s: float = 300.0) -> str:
    """Run one launch in its own session; the whole group is killed on a timeout."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            text=True, env=env, start_new_session=True)
    try:
        return proc.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return ""


def one_launch(launcher: list[str], sizes: list[int], env: dict, imb: str | None) -> list[tuple[str, int, float]]:
    rows = []
    for line in run([*launcher, "-n", "2", sys.executable, "-c", LOOP, *map(str, sizes)], env).splitlines():
        n_bytes, seconds = line.split()
        rows.append(("plain loop", int(n_bytes), float(seconds)))
    if imb:
        top = max(sizes).bit_length()
        text = run([*launcher, "-n", "2", imb, "Allreduce", "-npmin", "2", "-iter", "200", "-iter_policy", "off",
                    "-time", "1000", "-msglog", f"0:{top}"], env)
        for fields in (line.split() for line in text.splitlines()):
            if len(fields) >= 5 and fields[0].isdigit() and int(fields[0]) in sizes:
                rows.append(("IMB-MPI1", int(fields[0]), float(fields[3]) * 1e-6))
    return rows


def main() -> int:
    from mpibench.base.units import human_bytes
    from mpibench.drive.launch import launcher_argv
    from mpibench.base.parsing import parse_size

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--sizes", default="4K,64K,1M,4M")
    ap.add_argument("--imb", help="IMB-MPI1 built against the same MPI (also timed, as its own launch)")
    ap.add_argument("--out", help="CSV of every launch's rows")
    args = ap.parse_args()
    sizes, launcher = [parse_size(t) for t in args.sizes.split(",") if t], launcher_argv()
    rows = []
    for pair in range(args.pairs):
        for cma in ((True, False) if pair % 2 == 0 else (False, True)):
            env = {k: v for k, v in os.environ.items() if k not in OFF}
            if not cma:
                env.update(OFF)
            for tool, n_bytes, seconds in one_launch(launcher, sizes, env, args.imb):
                rows.append({"pair": pair + 1, "single_copy": "cma" if cma else "off", "tool": tool,
                             "bytes": n_bytes, "time_s": seconds, "tag": "measured"})
        print(f"single_copy_ab: pair {pair + 1}/{args.pairs} done", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    if table.empty:
        print("single_copy_ab: no launch gave a figure", file=sys.stderr)
        return 3
    if args.out:
        table.to_csv(args.out, index=False, float_format="%.6g")
    for (tool, n_bytes), group in table.groupby(["tool", "bytes"]):
        by = {k: g.time_s * 1e6 for k, g in group.groupby("single_copy")}
        cells = [f"{k}: {v.median():8.1f} us [{v.min():.1f}, {v.max():.1f}] ({len(v)})" for k, v in sorted(by.items())]
        ratio = by["cma"].median() / by["off"].median() if {"cma", "off"} <= set(by) else float("nan")
        print(f"{tool:<11}{human_bytes(int(n_bytes)):>8}  {'   '.join(cells)}   cma/off {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
