"""mpibench's round model beside SMPI, the same algorithm on the same platform.

SMPI (SimGrid's MPI) runs a C loop of ``MPI_Allreduce`` (``smpi_allreduce.c``:
float, sum, a few calls per size, ``SMPI_SHARED_MALLOC``; an untimed first call for the
``smp_*`` ones only) with thousands of ranks in one process, every message played out on SimGrid's flow-level
network model. The platform is one file: a TOML platform
(:mod:`mpibench.sim.platform`, written out as a SimGrid cluster by
:mod:`mpibench.sim.platform_xml`) or a SimGrid XML cluster (used as is, and
read back for the prediction). SMPI's algorithm is named to match ours:

==============  =====================================================
ring            ``lr`` (logical ring: reduce-scatter, all-gather)
rd              ``rdb`` (recursive doubling)
rabenseifner    ``rab_rdb`` (halving then doubling, MPICH's order)
hier            ``smp_rdb`` up to 16 KiB, ``smp_rsag_rab`` above (binomial inside
                the node, leaders' rd / Rabenseifner, binomial back)
==============  =====================================================

SMPI's collectives allocate real per-rank scratch and add real floats, so
p x bytes is bounded (``--memory-gib``; 4096 ranks x 64 MiB would be
256 GiB). Above that bound, rd and Rabenseifner run as ``smpi_schedule.c``:
the same message schedule written as ``MPI_Sendrecv`` calls on one shared
buffer with nothing added (``smpi_algorithm`` ``sendrecv-rd``,
``sendrecv-rab``), which SMPI times on the same network model;
``--via schedule`` runs them that way at every size, to check the two
against each other where both fit. ``--op none`` instead gives SMPI's own
``lr``, ``rdb`` and ``rab_rdb`` an operation that adds nothing: they send only
from the caller's shared buffer, so SMPI skips each message's copy into their
scratch, and they run at any p x bytes (a rank's copies to itself stay real
memcpy: ``rdb``'s take minutes at 4096 x 16 MiB, where the schedule makes
none); with computation not simulated, the simulated times are the same as
with ``MPI_SUM`` (``tests/test_smpi_crosscheck.py`` checks this at p = 64).

Both sides leave out the same things, so the ratio compares networks only:
SMPI charges no computation (``smpi/simulate-computation:no``) and the
prediction no reduction (gamma infinite); SMPI's message-size correction
factors are off (``smpi/bw-factor`` and ``smpi/lat-factor`` at 1), so a
link's latency and bandwidth mean the same on both sides. SMPI's ``lr``
hands counts below p to its default algorithm; such rows say so.

Every figure here is simulated (tag ``simulated``). SMPI is deterministic, so ``launches``
is 1; ``smpi_s`` is the median over the calls of that launch and the interval their spread.

    nice -n 15 python lab/studies/smpi_crosscheck.py --ranks 64,512 --out mpibench/results/data/smpi_crosscheck.csv
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mpibench.base.config import UsageError  # noqa: E402
from mpibench.sim import rounds  # noqa: E402
from mpibench.sim.platform import (SMPI_DEFAULT_BW_FACTOR, SMPI_DEFAULT_LAT_FACTOR, Platform,  # noqa: E402
                                   load_platform, parse_factors)
from mpibench.sim.platform_xml import hosts_needed, to_simgrid_xml  # noqa: E402
from smpi_table import finished, key, renote, show, wall_trend, write  # noqa: E402  (lab/studies/, on sys.path as the script's folder)

SMPI_NAMES = {"ring": "lr", "rd": "rdb", "rabenseifner": "rab_rdb", "hier": "smp_rdb"}
SCHEDULES = {"rd": "rd", "rabenseifner": "rab"}  # smpi_schedule.c's names
HIER_LARGE = "smp_rsag_rab"
SIZES = (8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 16 << 20, 64 << 20)  # 8 B ... 64 MiB
SMPI_FLAGS = ("--cfg=smpi/simulate-computation:no", "--cfg=smpi/privatization:no",  # the loop has no globals
              "--cfg=smpi/bw-factor:0:1", "--cfg=smpi/lat-factor:0:1",
              "--cfg=smpi/display-timing:no", "--log=root.thr:critical",
              # one mapping per shared buffer, not one per MiB: 4096 ranks x 2 x 16 MiB in 1 MiB blocks
              # pass the kernel's 65530 mappings (vm.max_map_count) and smpirun aborts
              "--cfg=smpi/shared-malloc-blocksize:67108864",
              # no send is detached (SMPI detaches sends below 64 KiB by default): with them detached,
              # SimGrid 3.32 spent 44 % of a p = 1024 ring's wall time walking a list in
              # CommImpl::finish (perf). Without: the same simulated times to 0.04 % (p = 64 and 512,
              # every algorithm), and that ring in 12.5 s instead of 33.5 s
              "--cfg=smpi/send-is-detached-thresh:0")


@dataclass(frozen=True)
class SmpiRow:
    nbytes: int
    median_s: float
    lo_s: float
    hi_s: float


def build(work: Path, name: str = "smpi_allreduce") -> Path:
    """smpicc ``lab/studies/<name>.c`` into ``work``; exit 3 when SimGrid is missing."""
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        print("smpi_crosscheck: smpicc/smpirun not found (install libsimgrid-dev: make system-packages)",
              file=sys.stderr)
        sys.exit(3)
    exe = work / name
    subprocess.run(["smpicc", "-O2", str(ROOT / "lab" / "studies" / f"{name}.c"), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return exe


def platform_files(source: Path, plat: Platform, p: int, work: Path) -> tuple[Path, Path]:
    """(SimGrid platform, hostfile) for p ranks: the XML as given, or the TOML written out."""
    xml = work / f"platform_{p}.xml"
    if source.suffix == ".xml":
        xml.write_text(source.read_text())
        cluster = ET.parse(source).getroot().find(".//cluster")
        prefix, suffix = cluster.get("prefix", ""), cluster.get("suffix", "")
    else:
        xml.write_text(to_simgrid_xml(plat, p))
        prefix, suffix = "node-", ""
    nodes, per = hosts_needed(plat, p), max(plat.ranks_per_node, 1)
    node = [r % nodes if plat.placement == "cyclic" else r // per for r in range(p)]
    hosts = work / f"hosts_{p}_{plat.placement}"
    hosts.write_text("".join(f"{prefix}{n}{suffix}\n" for n in node))
    return xml, hosts


def run_smpi(exe: Path, xml: Path, hosts: Path, p: int, algorithm: str, sizes, calls: int,
             timeout_s: float, schedule: str = "", op: str = "sum") -> tuple[list[SmpiRow], float, str]:
    """One smpirun over ``sizes``; (rows that finished, wall seconds, why it stopped or '');
    with ``schedule``, ``exe`` is smpi_schedule and plays that schedule instead; ``op`` is
    smpi_allreduce.c's operation (``sum``, or ``none``: nothing added, scratch left untouched)."""
    # the warm-up call only where it is needed: smp_* build their node communicators on first use
    program = [str(exe), schedule, str(calls)] if schedule else [str(exe), str(calls),
                                                                 "1" if algorithm.startswith("smp_") else "0", op]
    choice = [] if schedule else [f"--cfg=smpi/allreduce:{algorithm}"]  # a schedule calls no MPI_Allreduce
    cmd = ["smpirun", "-np", str(p), "-platform", str(xml), "-hostfile", str(hosts), *SMPI_FLAGS, *choice,
           *program, *map(str, sizes)]
    start = time.monotonic()
    # its own session: smpirun is a shell script, and on a timeout its simulator child must go too
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=xml.parent,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        why = "" if proc.returncode == 0 else f"smpirun exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        why = f"stopped after {timeout_s:.0f} s of wall time"
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0].isdigit():
            rows.append(SmpiRow(int(parts[0]), *map(float, parts[1:])))
    return rows, time.monotonic() - start, why


def note_for(strategy: str, p: int, nbytes: int, plat: Platform, why: str) -> str:
    notes = []
    if strategy == "ring" and nbytes // 4 < p:
        notes.append("SMPI lr: count < p, ran its default algorithm instead")
    if strategy == "rabenseifner" and nbytes // 4 < p:  # its blocks are count // p elements, the rest in the last
        notes.append("SMPI rab_rdb: count < p, all in its last block: each step moves the whole buffer (model: even split)")
    notes += rounds.notes(plat, strategy, p, nbytes)
    return "; ".join(notes + ([why] if why else []))


# SMPI's lr, rdb and rab_rdb send only from the caller's (shared) buffer, so with op ``none`` their
# scratch is never written: p x bytes costs address space only, and the memory bound does not apply
UNTOUCHED_SCRATCH = ("ring", "rd", "rabenseifner")


def jobs_for(strategy: str, p: int, sizes, memory_bytes: float, via: str,
             op: str = "sum") -> list[tuple[str, str, list[int]]]:
    """(SMPI algorithm or schedule name, schedule, sizes) for one strategy at p ranks: SMPI's own
    algorithm where p x bytes fits ``memory_bytes`` (or at every size with op ``none`` for
    ring, rd and rabenseifner), the Sendrecv schedule above (rd, rabenseifner)."""
    if op == "none" and strategy in UNTOUCHED_SCRATCH:
        memory_bytes = math.inf
    fits = [n for n in sizes if p * n <= memory_bytes]
    rest = [n for n in sizes if p * n > memory_bytes]
    if strategy in SCHEDULES and (via == "schedule" or rest):
        own, sched = ([], sizes) if via == "schedule" else (fits, rest)
    else:
        own, sched = fits, []
    if strategy == "hier":
        jobs = [(SMPI_NAMES[strategy], "", [n for n in own if n <= rounds.HIER_SMALL_BYTES]),
                (HIER_LARGE, "", [n for n in own if n > rounds.HIER_SMALL_BYTES])]
    else:
        jobs = [(SMPI_NAMES[strategy], "", own)]
    if sched:
        jobs.append((f"sendrecv-{SCHEDULES[strategy]}", SCHEDULES[strategy], sched))
    return [j for j in jobs if j[2]]


def _row(source: Path, plat: Platform, p: int, strategy: str, algorithm: str, nbytes: int, calls: int,
         predicted: float, wall_s: float, note: str, found: SmpiRow | None) -> dict:
    """One CSV row; ``found`` None is a case SMPI did not finish: no figure, and how long it ran."""
    figures = ({"smpi_s": found.median_s, "smpi_lo_s": found.lo_s, "smpi_hi_s": found.hi_s,
                "ratio": predicted / found.median_s if found.median_s else ""} if found else
               {"smpi_s": "", "smpi_lo_s": "", "smpi_hi_s": "", "ratio": ""})
    return {"date": datetime.date.today().isoformat(), "platform": source.name, "placement": plat.placement,
            "ranks": p, "ranks_per_node": plat.ranks_per_node, "strategy": strategy, "smpi_algorithm": algorithm,
            "bytes": nbytes, **figures, "calls": calls, "launches": 1, "predicted_s": predicted,
            "smpi_wall_s": round(wall_s, 2), "note": note, "tag": "simulated"}


def crosscheck(source: Path, plat: Platform, ranks, strategies, sizes, calls: int, timeout_s: float,
               work: Path, out_path: Path | None = None, memory_bytes: float = math.inf,
               via: str = "smpi", op: str = "sum", done=frozenset(), until: float = math.inf) -> list[dict]:
    """Every (p, strategy) through SMPI beside the round model, one ``smpirun`` per size with
    ``timeout_s`` each (several sizes in one launch cost far more than apart at large p: ranks that
    leave a size's rooted timing reduce early run on into the next size, and p = 2048, 8 B then 64 B
    took 18.6 s of wall time, 2.7 s with that reduce an all-reduce); with ``out_path`` the CSV is written after each size,
    so a run stopped midway keeps what it finished. Cases in ``done`` (:func:`smpi_table.key`) are
    skipped, and no size starts after ``until`` (time.monotonic())."""
    exe = build(work)
    schedule_exe = build(work, "smpi_schedule") if any(s in SCHEDULES for s in strategies) else None
    bare = replace(plat, gamma_bytes_per_s=math.inf)  # SMPI charges no reduction either
    out = []
    for p in ranks:
        xml, hosts = platform_files(source, plat, p, work)
        for strategy in strategies:
            for algorithm, schedule, some in jobs_for(strategy, p, sizes, memory_bytes, via, op):
                op_note = "SMPI op none (nothing added; same simulated time)" if op == "none" and not schedule else ""
                for n in some:
                    case = key(source.name, plat.placement, p, strategy, algorithm, n)
                    if case in done:
                        continue
                    if time.monotonic() >= until:
                        return out
                    found, wall_s, why = run_smpi(schedule_exe if schedule else exe, xml, hosts, p, algorithm,
                                                  [n], calls, timeout_s, schedule, op)
                    predicted = rounds.sync_s(bare, strategy, p, n)
                    row = next((r for r in found if r.nbytes == n), None)
                    trend = wall_trend(out_path, case) if out_path is not None and not row else ""
                    note = (note_for(strategy, p, n, plat, op_note) if row else
                            "; ".join(filter(None, (f"SMPI did not finish: {why or 'no output'}", trend))))
                    out.append(_row(source, plat, p, strategy, algorithm, n, calls, predicted, wall_s, note, row))
                    print(f"p={p} {strategy} ({algorithm}) {n} B: {why or 'done'} in {wall_s:.1f} s",
                          file=sys.stderr, flush=True)
                    if out_path is not None:
                        write(out_path, out)
    return out


def _ints(text: str) -> list[int]:
    units = {"K": 1 << 10, "M": 1 << 20}
    try:
        return [int(t[:-1]) * units[t[-1]] if t[-1] in units else int(t) for t in text.split(",") if t]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", default=str(ROOT / "platforms" / "smpi_4x128.toml"),
                    help="TOML platform or SimGrid XML cluster [default: platforms/smpi_4x128.toml]")
    ap.add_argument("--placement", choices=("block", "cyclic"), help="override the platform's placement")
    ap.add_argument("--ranks", type=_ints, default=[64, 512], help="comma-separated rank counts [64,512]")
    ap.add_argument("--strategies", default="rd,rabenseifner,hier,ring", help="of ring, rd, rabenseifner, hier")
    ap.add_argument("--sizes", type=_ints, default=list(SIZES), help="bytes, comma-separated (K, M suffixes)")
    ap.add_argument("--calls", type=int, default=3, help="calls per size [3]")
    ap.add_argument("--memory-gib", type=float, default=4.0,
                    help="skip sizes whose ranks x bytes exceed this: SMPI's collectives allocate real "
                         "per-rank scratch and apply the sums [4]")
    ap.add_argument("--timeout", type=float, default=600.0, help="wall seconds per size (one smpirun each) [600]")
    ap.add_argument("--resume", action="store_true", help="skip cases --out already holds an SMPI figure for")
    ap.add_argument("--renote", action="store_true", help="add to --out's rows of this platform the notes they lack")
    ap.add_argument("--total", type=float, default=math.inf, help="start no size after this many wall seconds")
    ap.add_argument("--via", choices=("smpi", "schedule"), default="smpi",
                    help="rd, rabenseifner: SMPI's algorithm where it fits memory, the Sendrecv schedule above "
                         "(smpi), or the schedule at every size (schedule) [smpi]")
    ap.add_argument("--op", choices=("sum", "none"), default="sum",
                    help="smpi_allreduce.c's operation: MPI_SUM, or none (a commutative operation that adds "
                         "nothing: same simulated time, and ring, rd, rabenseifner then run at every size) [sum]")
    ap.add_argument("--network-model", choices=("factor-free", "default"), default="factor-free",
                    help="factor-free: SMPI's latency/bandwidth factors at 1 on both sides; default: SMPI's own "
                         "default factors, and predict given the same ([software] smpi_factors) -- write it to "
                         "its own --out, its rows have the same keys [factor-free]")
    ap.add_argument("--out", help="CSV to write (rows of the cases run replaced, the others kept)")
    args = ap.parse_args(argv)
    strategies = [s for s in args.strategies.split(",") if s]
    if not set(strategies) <= set(SMPI_NAMES) or not 1 <= args.calls <= 1000:
        print(f"smpi_crosscheck: strategies must be of {', '.join(SMPI_NAMES)}; calls 1..1000", file=sys.stderr)
        return 2
    try:
        plat = load_platform(args.platform)
    except UsageError as exc:
        print(f"smpi_crosscheck: {exc}", file=sys.stderr)
        return 2
    plat = replace(plat, placement=args.placement or plat.placement)
    if args.network_model == "default":
        global SMPI_FLAGS
        SMPI_FLAGS = tuple(f for f in SMPI_FLAGS if "-factor:" not in f)
        plat = replace(plat, lat_factor=parse_factors(SMPI_DEFAULT_LAT_FACTOR, "SMPI"),
                       bw_factor=parse_factors(SMPI_DEFAULT_BW_FACTOR, "SMPI"))
    if args.renote and args.out:
        return renote(Path(args.out), Path(args.platform).name, lambda s, p, n: note_for(s, p, n, plat, ""))
    done = finished(Path(args.out)) if args.resume and args.out else frozenset()
    until = time.monotonic() + args.total
    with tempfile.TemporaryDirectory(prefix="smpi_crosscheck_") as work:
        rows = []
        for p in args.ranks:
            memory = args.memory_gib * 2 ** 30
            skipped = [n for n in args.sizes if p * n > memory]
            bounded = [s for s in strategies if args.op == "sum" or s not in UNTOUCHED_SCRATCH]
            if skipped and set(bounded) - set(SCHEDULES):
                print(f"p={p}: {', '.join(sorted(set(bounded) - set(SCHEDULES)))} skip {', '.join(map(str, skipped))} B "
                      f"(--memory-gib {args.memory_gib:g}); rd and rabenseifner run them as the Sendrecv schedule "
                      f"(or as SMPI's own with --op none)", file=sys.stderr)
            rows += crosscheck(Path(args.platform), plat, [p], strategies, args.sizes, args.calls, args.timeout,
                               Path(work), Path(args.out) if args.out else None, memory, args.via, args.op,
                               done, until)
    show(rows)
    return 0 if not rows or any(r["smpi_s"] != "" for r in rows) else 3  # no rows: --resume found all done


if __name__ == "__main__":
    sys.exit(main())
