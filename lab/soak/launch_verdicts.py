"""Do repeated ``bench --launches N`` runs give the same verdict per cell?

    python lab/soak/launch_verdicts.py [--repetitions 5] [--launches 6] [--sizes 4K,64K,1M,4M,16M,64M]
        [--strategies ring,rabenseifner,auto] [--ranks 2] [--pages 4k|system] [--work DIR] [--write]

Not under mpirun: runs ``python -m mpibench bench --launches N`` ``--repetitions``
times into ``WORK/rep-K`` (a repetition whose folder already holds ``launches.csv``
is read, not run again), then combines every repetition's launch folders with
the current statistics (:mod:`mpibench.results.launchtable`) and prints each
repetition's verdict table (faster / slower / indistinguishable / bimodal
against ``blocking``, the median paired ratio and its 95 % interval over
launches), the host's load averages beside each, and per cell how many
repetitions give its most common verdict (``decided``: that verdict is faster,
slower or indistinguishable, not "cannot tell"). The verdicts are at 95 %
confidence against the ±10 % practical-equivalence margin of
:mod:`mpibench.results.launchstats`, stated in every row. ``--write`` writes
``lab/data/bench_verdicts.csv`` (every repetition's cells) and
``lab/data/verdict_agreement.csv`` (one row per cell); every row carries
``mpi_settings``, the MPI library's tuning variables of this script's
environment (:mod:`mpibench.base.mpi_settings`),
which its repetitions inherit, and ``pages``, bench's page policy (``--pages``;
rows written before bench had one were on the system's pages); rows of other
settings already in the files are kept: reading folders run under other settings needs those settings
exported again. Exit 0 when every
cell agrees in all but at most one repetition, 1 otherwise, 3 when a
repetition could not run.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

from mpibench.base.page_policies import DEFAULT_POLICY, POLICIES
from mpibench.results.measured_rows import replace_rows

ROOT = Path(__file__).resolve().parents[2]
MEASURED = ROOT / "lab" / "data"


def replace_setting(path: Path, new: pd.DataFrame) -> pd.DataFrame:
    """``new`` in place of the rows of ``path`` under the same ``mpi_settings`` and ``pages``; the others kept
    (rows written before bench had --pages were on the system's pages)."""
    return replace_rows(path, new, {"mpi_settings": "", "pages": "system"})


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def run_repetition(args, folder: Path) -> int:
    cmd = [sys.executable, "-m", "mpibench", "bench", "--launches", str(args.launches), "--np", str(args.ranks),
           "--sizes", args.sizes, "--strategies", args.strategies, "--pages", args.pages, "--out", str(folder),
           "--force"]
    print(f"# {' '.join(cmd)}  (load {load()})", flush=True)
    return subprocess.run(cmd, stdin=subprocess.DEVNULL).returncode


def cells(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the repetition's combined table, recomputed from its launch folders; its launches.csv)."""
    from mpibench.base.records import BENCH_COLUMNS
    from mpibench.results.launchtable import combine, read_launches, states

    launches = pd.read_csv(folder / "launches.csv")
    kept = [str(folder / f) for f, code in zip(launches.folder, launches.exit) if code in (0, 1)]
    rows, prints = read_launches(kept)
    return combine(rows, states(prints), BENCH_COLUMNS), launches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--launches", type=int, default=6)
    parser.add_argument("--sizes", default="4K,64K,1M,4M,16M,64M")
    parser.add_argument("--strategies", default="ring,rabenseifner,auto")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--pages", choices=POLICIES, default=DEFAULT_POLICY, help="bench --pages")
    parser.add_argument("--work", default="launch-verdicts", help="folder of the repetitions' outputs")
    parser.add_argument("--write", action="store_true", help="write lab/data/bench_verdicts.csv and "
                        "verdict_agreement.csv")
    args = parser.parse_args()
    from mpibench.base.mpi_settings import describe, mpi_settings
    from mpibench.base.units import human_bytes
    from mpibench.results import launchstats as ls
    from mpibench.results.launchtable import verdict_lines

    work, found = Path(args.work), []
    for k in range(1, args.repetitions + 1):
        folder = work / f"rep-{k}"
        if not (folder / "launches.csv").exists() and run_repetition(args, folder) not in (0, 1):
            print(f"launch_verdicts: repetition {k} could not run", file=sys.stderr)
            return 3
        table, launches = cells(folder)
        found.append((k, table, launches))
        print(f"\n## repetition {k}: {len(launches)} launches, load at each launch "
              f"{' '.join(f'{x:.1f}' for x in launches.load_before)}, states "
              f"{' '.join(launches.state)}")
        print("\n".join(verdict_lines(table)))
    long = pd.concat([t.assign(repetition=k, load_median=float(l.load_before.median()),
                               states=" ".join(l.state))
                      for k, t, l in found], ignore_index=True)
    long = long[long.verdict.notna()]
    agree_rows, ok = [], True
    print(f"\n## agreement over {len(found)} repetitions (most common verdict, how many give it)")
    for (name, n_bytes), group in long.groupby(["strategy", "bytes"], sort=False):
        verdicts = list(group.sort_values("repetition").verdict)
        common, count = Counter(verdicts).most_common(1)[0]
        holds = count >= len(verdicts) - 1
        ok &= holds
        agree_rows.append({"strategy": name, "bytes": int(n_bytes), "verdicts": ";".join(verdicts),
                           "most_common": common, "agreeing": count, "repetitions": len(verdicts),
                           "agree_in_all_but_one": holds, "decided": common in ls.DECIDED})
        print(f"{name:<14}{human_bytes(int(n_bytes)):>9}  {common:<18} {count}/{len(verdicts)}  {'; '.join(verdicts)}")
    if args.write:
        MEASURED.mkdir(parents=True, exist_ok=True)
        date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        keep = ["repetition", "strategy", "ranks", "bytes", "launches", "confidence_pct", "vs_blocking",
                "vs_blocking_low", "vs_blocking_high", "margin_pct", "resolution_pct", "verdict", "clusters", "by_state", "model_ratio",
                "model_ratio_low", "model_ratio_high", "model_call", "load_median", "states"]
        settings = " ".join(mpi_settings())  # the repetitions inherit this environment
        cells_path, agree_path = MEASURED / "bench_verdicts.csv", MEASURED / "verdict_agreement.csv"
        replace_setting(cells_path, long[keep].assign(date=date, mpi_settings=settings, pages=args.pages)).to_csv(
            cells_path, index=False, float_format="%.4g")
        replace_setting(agree_path, pd.DataFrame(agree_rows).assign(
            date=date, launches=args.launches, confidence_pct=ls.CONFIDENCE * 100, margin_pct=ls.MARGIN * 100,
            mpi_settings=settings, pages=args.pages)).to_csv(agree_path, index=False)
        print(f"# wrote {MEASURED / 'bench_verdicts.csv'} and verdict_agreement.csv")
    decided = sum(r["decided"] for r in agree_rows)
    print(f"# {'every cell agrees' if ok else 'NOT every cell agrees'} in at least "
          f"{len(found) - 1} of {len(found)} repetitions ({decided} of {len(agree_rows)} cells decided: faster, "
          f"slower or indistinguishable within ±{ls.MARGIN:.0%}); load now {load()}; "
          f"MPI settings: {describe(mpi_settings())}")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
