"""``bench``'s baselines against an independent anchor, in the same interleaved rounds.

    python lab/studies/vs_anchor.py [--anchor PATH [--anchor-buffers one-page-offset]] [--ranks 2] [--sizes 4K,...,64M] [--rounds 5] [--launches 6]
        [--round-ms 50 | --iterations N] [--out DIR] [--write]

Not under mpirun: it runs ``bench --launches K`` (the driver outside MPI:
``MPIBENCH_MPIEXEC``, else ``mpirun``) with ``--strategies c_floor --anchor PATH``,
so in every launch the anchor runs as its own job, launched by rank 0 in every
round at every size while the benchmark's ranks sleep: the anchor's launches
are interleaved with bench's own, and every launch begins with its fingerprint.
The anchor is ``--anchor`` (an IMB-MPI1 or osu_allreduce binary you
built against the same MPI), else the project's own stand-alone C program
(``mpibench/job/bench/c_anchor.c``, osu_allreduce's method), built here with the
MPI's ``mpicc``. The job and the anchor run on one page policy (``--pages``: 4 KiB pages
everywhere by default, as a C tool's ``malloc`` gets them; ``huge``: NumPy's,
the MPI's scratch and the anchor's buffers all on transparent huge pages;
see ``mpibench/job/bench/pages.py``). Printed per size: each
one's ``t_avg`` (median over rounds of the mean over ranks of the mean call
time; then the median over launches), ``blocking`` and ``c_floor`` over the
anchor, and whether both are within ``--tolerance`` (10 %); then the same
launches in bench's frame: blocking / anchor paired inside each launch (``t_max``),
its 95 % interval over launches, the verdict, and its median in each launch state
(named by the fingerprint). ``--anchor-buffers one-page-offset`` runs IMB-MPI1
unchanged with ``anchor_page_offset.c`` preloaded, so that its buffers start
where bench's do (16 bytes into a page): IMB's own sit 16 bytes apart modulo
4096 below malloc's mmap threshold, which made its 32-128 KiB calls 2-2.6x
slower here. ``--write`` writes ``lab/data/anchor_frame.csv``.
The host's load before and after. Exit 0 when every size is within (both tables),
1 when one is not, 3 when the job could not run.
"""
from __future__ import annotations

import argparse
import csv
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from mpibench.base.mpi_threads import DEFAULT_LEVEL, LEVELS

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


SHIM_SOURCE = Path(__file__).with_name("anchor_page_offset.c")
ONE_PAGE_OFFSET = "one-page-offset"


def with_one_page_offset(anchor: str, folder: str | None = None) -> str:
    """A launcher script for ``anchor`` (IMB-MPI1, unchanged) with anchor_page_offset.c preloaded:
    every buffer IMB takes from MPI_Alloc_mem starts 16 bytes into a page, as bench's do. Its name
    keeps the tool's, so bench still runs it as IMB. Kept in ``folder`` (default: bench's build
    cache, in a folder named by the shim, the compiler and the tool), so the bench command
    printed with it runs again as pasted."""
    import hashlib

    from mpibench.job.bench import cfloor

    mpicc = cfloor.find_mpicc()
    if mpicc is None:
        sys.exit(f"vs_anchor: no mpicc beside this Python or on PATH to build {SHIM_SOURCE.name}")
    tool = os.path.abspath(anchor)
    if folder is None:
        key = hashlib.sha256(SHIM_SOURCE.read_bytes() + f"\0{mpicc}\0{tool}".encode()).hexdigest()[:12]
        folder = str(cfloor.cache_dir() / f"anchor-page-offset-{key}")
    os.makedirs(folder, exist_ok=True)
    shim = Path(folder, "libanchor_page_offset.so")
    built = subprocess.run([mpicc, "-O2", "-shared", "-fPIC", "-o", str(shim), str(SHIM_SOURCE)],
                           capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"vs_anchor: {mpicc} could not build {SHIM_SOURCE.name}: {built.stderr.strip()[-300:]}")
    script = Path(folder, f"{Path(anchor).name}-{ONE_PAGE_OFFSET}")
    script.write_text(f"#!/bin/sh\nLD_PRELOAD={shlex.quote(str(shim))} exec {shlex.quote(tool)} \"$@\"\n")
    script.chmod(0o755)
    return str(script)


def loads_at_launch(out: str) -> str:
    """The 1-minute load average each launch of a kept folder began with (launches.csv)."""
    try:
        with open(os.path.join(out, "launches.csv"), newline="") as fh:
            return "launches " + " ".join(f"{float(r['load_before']):.2f}" for r in csv.DictReader(fh))
    except (OSError, KeyError, ValueError):
        return "not recorded"


def calls_args(args) -> list[str]:
    """bench's call-count options: a count given is run exactly; else each round lasts
    ``--round-ms`` on both sides (the anchor gets the same count of calls per round)."""
    if args.iterations is not None:
        return ["--iterations", str(args.iterations)]
    return ["--round-ms", str(args.round_ms)]


def run_bench(args, anchor: str, out: str) -> tuple[int, str]:
    """``bench --launches K`` (the driver outside MPI): every launch in OUT/launch-NN, each with its
    fingerprint, the anchor launched in every round of every launch, interleaved with bench's own."""
    from mpibench.drive.launch import launcher_argv

    cmd = [sys.executable, "-m", "mpibench", "bench", "--launches", str(args.launches), "--np", str(args.ranks),
           "--sizes", args.sizes, "--strategies", "c_floor", "--anchor", anchor, "--rounds", str(args.rounds),
           *calls_args(args), "--warmup", str(args.warmup), "--no-model", "--out", out, "--force",
           # huge: bench leaves the pages to NumPy and malloc, both told below to madvise them
           "--pages", "system" if args.pages == "huge" else "4k", "--thread-level", args.thread_level]
    print(f"# {shlex.join(cmd)}", flush=True)
    from mpibench.drive.launch import job_env
    from mpibench.job.bench.pages import with_pages

    env = with_pages(job_env(), huge=args.pages == "huge")  # one page policy for ranks, MPI scratch, anchor
    env.setdefault("MPIBENCH_MPIEXEC", shlex.join(launcher_argv(args.mpiexec)))  # the anchor's launcher
    done = subprocess.run(cmd, stdin=subprocess.DEVNULL, env=env, timeout=args.timeout, text=True,
                          capture_output=True)
    if done.returncode != 0:
        print(done.stdout[-2000:] + done.stderr[-2000:], file=sys.stderr)
    return done.returncode, done.stdout


def binary_label(path: str) -> str:
    """The anchor's file name and the start of its SHA-256: two builds of one tool (another
    version, other compiler flags) measured differently here, so a row says which binary ran."""
    import hashlib

    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    return f"{os.path.basename(path)} sha256:{digest[:12]}"


def kept_rows(path: Path, new):
    """``new`` in place of the rows of ``path`` with the same anchor binary and thread level; the
    others kept (rows written before bench had --thread-level ran at mpi4py's default, multiple)."""
    from mpibench.results.measured_rows import replace_rows

    return replace_rows(path, new, {"anchor": "", "thread_level": "multiple"})


def header_lines(printed: str, names) -> list[str]:
    """The lines of bench's header that say the conditions ``names`` (as ``compare`` reads them:
    results.launchcompare.CONDITION_LINES), each "not printed" when the header lacks it."""
    from mpibench.results.launchcompare import CONDITION_LINES

    lines = printed.splitlines()
    return [next((line for line in lines if line.startswith(CONDITION_LINES[name])),
                 f"{CONDITION_LINES[name]}not printed") for name in names]


def frame_table(out: str, tolerance: float) -> tuple[list[str], bool, list[dict]]:
    """Per size, from bench --launches' combined table: blocking / anchor paired within each launch,
    its 95 % interval over launches, its verdict, and its median in each launch state; a size passes
    when the verdict is indistinguishable or every state's median is within ``tolerance``."""
    import pandas as pd

    from mpibench.base.units import human_bytes

    from mpibench.base.records import BENCH_COLUMNS
    from mpibench.results.launchtable import combine, read_launches, states

    # recombined from the launch folders, so a driver stopped before its own tables still counts
    folders = [os.path.join(out, f) for f in sorted(os.listdir(out))
               if f.startswith("launch-") and os.path.exists(os.path.join(out, f, "bench.csv"))]
    per_launch, prints = read_launches(folders)
    table = combine(per_launch, states(prints), BENCH_COLUMNS)
    lines = [f"{'size':>8} {'blocking/anchor':>15} {'95 % interval':>15}  {'verdict':<18} by launch state"]
    ok, rows = True, []
    for r in table[table.strategy == "anchor"].sort_values("bytes").itertuples(index=False):
        state_medians = [float(part.split()[1].rstrip("x")) for part in str(r.by_state).split(", ") if part]
        # vs_blocking of the anchor row is blocking / anchor; its inverse is the anchor's time over blocking's
        within = r.verdict == "indistinguishable" or all(abs(m - 1) <= tolerance for m in state_medians)
        ok &= within
        floor = floor_over_anchor(per_launch, int(r.bytes))
        rows.append({"bytes": int(r.bytes), "blocking_over_anchor": r.vs_blocking, "low": r.vs_blocking_low,
                     "high": r.vs_blocking_high, "margin_pct": r.margin_pct, "resolution_pct": r.resolution_pct,
                     "verdict": r.verdict, "by_state": r.by_state, "launches": r.launches, "within": within,
                     "c_floor_over_anchor": floor.ratio.median, "c_floor_low": floor.ratio.low,
                     "c_floor_high": floor.ratio.high, "c_floor_verdict": floor.verdict})
        lines.append(f"{human_bytes(int(r.bytes)):>8} {r.vs_blocking:15.2f} "
                     f"{f'[{r.vs_blocking_low:.2f}, {r.vs_blocking_high:.2f}]':>15}  {r.verdict:<18} "
                     f"{r.by_state}  {'yes' if within else 'NO'}   c_floor/anchor {floor.ratio.median:.2f} "
                     f"[{floor.ratio.low:.2f}, {floor.ratio.high:.2f}] {floor.verdict}")
    return lines, ok, rows


def floor_over_anchor(per_launch, size_bytes: int):
    """The like-for-like pair: the C loop's time over the anchor's, paired inside each launch.

    Both are C loops of ``MPI_Allreduce``; ``blocking`` adds mpi4py's per-call cost, which at
    small sizes is a large part of a call. Each row's ``vs_blocking`` is blocking / row, so per
    launch the time ratio c_floor / anchor = (blocking / anchor) / (blocking / c_floor); its
    verdict reads as the anchor's against the C loop, as ``blocking_over_anchor``'s reads as
    the anchor's against blocking ("faster": the anchor takes less time)."""
    from mpibench.results.launchstats import compare

    ratios = []
    measured = per_launch[(per_launch.bytes == size_bytes) & (per_launch.get("tag", "measured") == "measured")]
    for _, launch in measured.groupby("launch"):
        by = launch.set_index("strategy").vs_blocking
        if {"anchor", "c_floor"} <= set(by.index) and by["c_floor"] > 0:
            ratios.append(float(by["anchor"]) / float(by["c_floor"]))
    return compare(ratios)


def figures(out: str) -> dict[tuple[str, int], float]:
    """(strategy, bytes) -> t_avg seconds, from one job's measured bench rows."""
    with open(os.path.join(out, "bench.csv"), newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["tag"] == "measured"]
    return {(r["strategy"], int(r["bytes"])): float(r["time_avg_s"]) for r in rows}


def table(launches: list[dict[tuple[str, int], float]], tolerance: float) -> tuple[list[str], bool]:
    """Per size: each figure's median over the launches, and the median of each launch's ratio
    (a launch's own state, e.g. where its buffers landed, shifts all its rounds together)."""
    from mpibench.base.units import human_bytes

    lines = [f"{'size':>8} {'anchor us':>10} {'blocking us':>11} {'c_floor us':>10} "
             f"{'blocking/anchor':>15} {'c_floor/anchor':>14}  within ±{tolerance:.0%}"]
    ok = True
    for n in sorted({b for by in launches for _, b in by}):
        got = {name: [by.get((name, n)) for by in launches] for name in ("anchor", "blocking", "c_floor")}
        if any(v is None or v <= 0 for values in got.values() for v in values):
            lines.append(f"{human_bytes(n):>8}  missing a row in some launch: {got}")
            ok = False
            continue
        ratios = [statistics.median(b / a for a, b in zip(got["anchor"], got[name])) for name in ("blocking", "c_floor")]
        within = all(abs(r - 1) <= tolerance for r in ratios)
        ok &= within
        anchor, blocking, floor = (statistics.median(got[k]) for k in ("anchor", "blocking", "c_floor"))
        lines.append(f"{human_bytes(n):>8} {anchor * 1e6:10.1f} {blocking * 1e6:11.1f} {floor * 1e6:10.1f} "
                     f"{ratios[0]:15.2f} {ratios[1]:14.2f}  {'yes' if within else 'NO'}")
    return lines, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchor", default=None, help="IMB-MPI1 or osu_allreduce binary (default: c_anchor.c)")
    parser.add_argument("--anchor-buffers", choices=["own", ONE_PAGE_OFFSET], default="own",
                        help="own: IMB-MPI1 as built; one-page-offset: its MPI_Alloc_mem buffers start 16 bytes "
                        "into a page, as bench's do (a PMPI shim, anchor_page_offset.c, preloaded; the binary "
                        "unchanged). Below 128 KiB IMB's two buffers otherwise sit 16 bytes apart modulo 4096")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--launches", type=int, default=6, help="bench --launches: separate jobs; medians over them")
    parser.add_argument("--pages", choices=["4k", "huge"], default="4k",
                        help="4k: no buffer madvises huge pages (as a C tool's malloc by default); huge: NumPy's, "
                        "the MPI's and the anchor's all do (GLIBC_TUNABLES=glibc.malloc.hugetlb=1)")
    parser.add_argument("--thread-level", choices=LEVELS, default=DEFAULT_LEVEL,
                        help="bench --thread-level: single starts bench's MPI as IMB-MPI1 and OSU start theirs")
    parser.add_argument("--iterations", type=int, default=None,
                        help="timed calls per round, every size [default: as many as last --round-ms]")
    parser.add_argument("--round-ms", type=float, default=50.0,
                        help="without --iterations: each round's calls last this long (bench's --round-ms)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--mpiexec", default=None, help="launcher (default: $MPIBENCH_MPIEXEC, else mpirun)")
    parser.add_argument("--timeout", type=float, default=7200.0, help="seconds for all launches together")
    parser.add_argument("--out", default=None, help="keep bench --launches' folder here; a folder that "
                        "already holds its launches.csv is read, not run again")
    parser.add_argument("--write", action="store_true", help="write lab/data/anchor_frame.csv")
    args = parser.parse_args()
    if args.anchor_buffers == ONE_PAGE_OFFSET and (args.anchor is None or "imb" not in Path(args.anchor).name.lower()):
        print("vs_anchor: --anchor-buffers one-page-offset places IMB-MPI1's MPI_Alloc_mem buffers: give --anchor "
              "PATH/IMB-MPI1 (osu_allreduce page-aligns its buffers, c_anchor.c places its own as bench's)",
              file=sys.stderr)
        return 2
    anchor = args.anchor or own_anchor()
    label = binary_label(anchor) + ("" if args.anchor_buffers == "own" else f" {ONE_PAGE_OFFSET}")
    before, after = load(), None
    with tempfile.TemporaryDirectory(prefix="vs-anchor-") as tmp:
        out = args.out or tmp
        if args.anchor_buffers == ONE_PAGE_OFFSET:
            anchor = with_one_page_offset(anchor)
        done = [f for f in (os.listdir(out) if os.path.isdir(out) else [])
                if f.startswith("launch-") and os.path.exists(os.path.join(out, f, "bench.csv"))]
        if os.path.exists(os.path.join(out, "launches.csv")) or len(done) >= args.launches:  # kept: reused
            print(f"# reusing {out}", flush=True)
            printed = ""
            before, after = loads_at_launch(out), "not recorded"  # the host's now says nothing of those launches
        else:
            code, printed = run_bench(args, anchor, out)
            if code != 0:
                print(f"vs_anchor: bench --launches exited {code}: could not run", file=sys.stderr)
                return 3
        folders = sorted(f for f in os.listdir(out) if f.startswith("launch-"))
        launches = [figures(os.path.join(out, f)) for f in folders
                    if os.path.exists(os.path.join(out, f, "bench.csv"))]
        lines, ok = table(launches, args.tolerance)
        frame, frame_ok, rows = frame_table(out, args.tolerance)
        first = Path(out, folders[0], "stdout.txt") if folders else None
        printed = first.read_text(errors="replace") if first is not None and first.exists() else printed
        conditions = header_lines(printed, ("pages", "MPI thread level"))
    print(f"# p={args.ranks}  anchor {label}  {len(launches)} launches x {args.rounds} interleaved rounds x "
          f"{args.iterations or f'{args.round_ms:g} ms of'} calls  load before {before}, after {after or load()}")
    print("\n".join(conditions))
    print("\n".join(lines))
    print("# the same launches, paired within each launch (t_max), over launches:")
    print("\n".join(frame))
    print(f"# {'every size' if frame_ok else 'NOT every size'}: indistinguishable, or within ±{args.tolerance:.0%} "
          f"in every launch state")
    if args.write:
        import datetime

        import pandas as pd

        date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        path = Path(__file__).resolve().parents[2] / "lab" / "data" / "anchor_frame.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        new = pd.DataFrame(rows).assign(date=date, anchor=label, load_before=before,
                                        load_after=after or load(), thread_level=args.thread_level)
        kept_rows(path, new).to_csv(path, index=False, float_format="%.4g")
        print(f"# wrote {path}")
    ok = ok and frame_ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
