"""Regenerate the lab's measured figures: lab/data/*.csv (shown by lab/findings.md).

    python lab/studies/docs_figures.py [--launches 3] [--ranks 2]

Each figure is measured here and now, in several launches of the same job (a launch's own
state moves all of its rounds together, so the interval is over launches, not rounds), and
written with the date, the number of launches, the host's load and whether the ranks
outnumbered the cores. Nothing in the manual's prose repeats these numbers.

vs-blocking.csv: `bench` at p = --ranks, per strategy and size, the median over launches of
each launch's `vs_blocking` (blocking MPI_Allreduce time / the strategy's time, in the same
rounds; > 1 is faster than the blocking call) and its lowest and highest launch.

history-cost.csv: what the history and the online check cost a training run
(lab/studies/check_overhead.py's measurement: `run` jobs alternately with the history on and
off, each timed inside the job), per pair of launches the loop without history over the loop
with it, and over the loop plus the online check; the median, lowest and highest pair.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "lab" / "data"
VENV_BIN = Path(sys.executable).parent
MPIRUN_FLAGS = ["--oversubscribe", "--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1"]


def bench_launch(out: Path, ranks: int, sizes: str, strategies: str) -> pd.DataFrame:
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1")
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    command = [str(VENV_BIN / "mpirun"), *MPIRUN_FLAGS, "-n", str(ranks), sys.executable, "-m", "mpibench",
               "bench", "--sizes", sizes, "--strategies", strategies, "--rounds", "5", "--no-model",
               "--c-baseline", "off", "--out", str(out)]
    subprocess.run(command, env=env, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   timeout=900)
    frame = pd.read_csv(out / "bench.csv")
    return frame[frame["tag"] == "measured"]


def vs_blocking(launches: int, ranks: int, sizes: str, strategies: str) -> pd.DataFrame:
    frames, loads = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for k in range(launches):
            loads.append(os.getloadavg()[0])
            frame = bench_launch(Path(scratch) / f"launch-{k}", ranks, sizes, strategies)
            frames.append(frame.assign(launch=k))
    rows = pd.concat(frames)
    rows = rows[rows["strategy"] != "blocking"]
    table = rows.groupby(["strategy", "bytes"], sort=False).agg(
        vs_blocking_median=("vs_blocking", "median"), vs_blocking_lowest=("vs_blocking", "min"),
        vs_blocking_highest=("vs_blocking", "max"), time_max_us_median=("time_max_s", "median"),
        launches=("launch", "nunique")).reset_index()
    table["time_max_us_median"] = (table["time_max_us_median"] * 1e6).round(1)
    for column in ("vs_blocking_median", "vs_blocking_lowest", "vs_blocking_highest"):
        table[column] = table[column].round(2)
    table.insert(0, "ranks", ranks)
    return with_host_columns(table, ranks, loads)


def with_host_columns(table: pd.DataFrame, ranks: int, loads: list[float]) -> pd.DataFrame:
    """The host's state beside every figure: cores, oversubscription, load, date."""
    table["host_cores"] = os.cpu_count() or 1
    table["oversubscribed"] = ranks > table["host_cores"]
    # the other processes' load: a figure taken while it exceeds the cores is no result either
    table["loaded"] = max(loads) > table["host_cores"]
    table["load_1m_range"] = f"{min(loads):.1f}-{max(loads):.1f}"
    table["date_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    return table


def history_cost(pairs: int, ranks: int, strategy: str = "native", min_loop_s: float = 2.0) -> pd.DataFrame:
    sys.path.insert(0, str(ROOT / "lab" / "studies"))
    from check_overhead import timed_run

    from check_overhead import SIZES

    size = tuple(int(x) for x in SIZES.split(",")[0].split("x"))  # the main job's MLP
    steps, loads = 1500, [os.getloadavg()[0]]
    while timed_run(ranks, steps, strategy, False, size)["loop_s"] < min_loop_s:
        steps *= 2  # a loop shorter than the floor measures start-up, not steps
    in_loop, with_checks = [], []
    for _ in range(pairs):
        on, off = timed_run(ranks, steps, strategy, True, size), timed_run(ranks, steps, strategy, False, size)
        loads.append(os.getloadavg()[0])
        in_loop.append(on["loop_s"] / off["loop_s"] * off["steps"] / on["steps"])
        with_checks.append((on["loop_s"] + on["check_s"]) / off["loop_s"] * off["steps"] / on["steps"])
    rows = []
    for what, ratios in (("history, in the loop", in_loop), ("history and online check", with_checks)):
        series = pd.Series(ratios)
        rows.append({"ranks": ranks, "strategy": strategy, "steps": steps, "cost": what,
                     "times_slower_median": round(series.median(), 2),
                     "times_slower_lowest": round(series.min(), 2),
                     "times_slower_highest": round(series.max(), 2), "pairs": pairs})
    return with_host_columns(pd.DataFrame(rows), ranks, loads)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=3, help="launches of each job [default: 3]")
    parser.add_argument("--ranks", type=int, default=2, help="ranks of the bench job [default: 2]")
    parser.add_argument("--sizes", default="4K,64K,1M,16M", help="bench sizes [default: 4K,64K,1M,16M]")
    parser.add_argument("--strategies", default="native,ring,rabenseifner,auto",
                        help="bench strategies [default: native,ring,rabenseifner,auto]")
    parser.add_argument("--figures", default="vs-blocking,history-cost",
                        help="which files to write [default: vs-blocking,history-cost]")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    figures = {"vs-blocking": lambda: vs_blocking(args.launches, args.ranks, args.sizes, args.strategies),
               "history-cost": lambda: history_cost(args.launches, args.ranks)}
    for name in args.figures.split(","):
        table = figures[name]()
        table.to_csv(OUT / f"{name}.csv", index=False)
        print(f"wrote {OUT / (name + '.csv')} ({len(table)} rows, {args.launches} launches or pairs)")


if __name__ == "__main__":
    main()
