"""Peak parameter + gradient + optimizer-state bytes per rank, replicated against sharded.

Launches ``mpirun -n P python -m mpibench.job.shardmem STRATEGY MOMENTUM STEPS``
``--launches`` times for each strategy and world size (the launch is the unit of
repetition), takes each launch's largest rank, and writes one row per strategy
and size to ``lab/data/sharded_memory.csv`` (replacing that file's rows of the same strategy, size
and momentum; the others are kept): the arrays' sizes as the run
held them, and the median with the lowest and highest launch for the traced
figures (they include allocator and temporaries, so they may vary). Memory is
not time: a world larger than the host's cores changes none of these bytes.

    python lab/studies/sharded_memory.py [--ranks 2,4] [--strategies ring,hsdp] [--launches 3] [--momentum 0.9]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from mpirun import mpirun_command, run_command  # noqa: E402

STRATEGIES = ("ring", "zero-ring", "zero-halving", "hsdp")
FIXED = ("n_params", "params_bytes", "gradient_bytes", "optimizer_state_bytes")
TRACED = ("traced_held_bytes", "traced_peak_bytes")
COLUMNS = ("date_utc", "strategy", "ranks", "momentum", "launches", *FIXED, "params_gradient_state_bytes",
           *(f"{t}_{s}" for t in TRACED for s in ("median", "low", "high")), "tag")


def one_launch(ranks: int, strategy: str, momentum: float, steps: int) -> dict:
    cmd = mpirun_command() + ["-n", str(ranks), sys.executable, "-m", "mpibench.job.shardmem", strategy,
                              str(momentum), str(steps)]
    job = run_command(cmd, 300)
    rows = [json.loads(line.split(" ", 1)[1]) for line in job.stdout.splitlines() if line.startswith("SHARDMEM ")]
    if job.returncode != 0 or len(rows) != ranks:
        raise SystemExit(f"{strategy} on {ranks} ranks exited {job.returncode}:\n{job.text[-2000:]}")
    # The rank whose arrays are largest (uneven shards differ by an element; the lowest rank on a tie).
    return max(rows, key=lambda r: (r["params_bytes"] + r["gradient_bytes"] + r["optimizer_state_bytes"], -r["rank"]))


def row_for(ranks: int, strategy: str, momentum: float, launches: list[dict]) -> dict:
    fixed = {k: {r[k] for r in launches} for k in FIXED}
    if any(len(v) > 1 for v in fixed.values()):  # arrays of one configuration never change size
        raise SystemExit(f"{strategy} p={ranks}: array sizes differ between launches: {fixed}")
    row = {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
           "strategy": strategy, "ranks": ranks, "momentum": momentum, "launches": len(launches),
           **{k: next(iter(v)) for k, v in fixed.items()}, "tag": "measured"}
    row["params_gradient_state_bytes"] = row["params_bytes"] + row["gradient_bytes"] + row["optimizer_state_bytes"]
    for t in TRACED:
        values = [r[t] for r in launches]
        row.update({f"{t}_median": int(statistics.median(values)), f"{t}_low": min(values), f"{t}_high": max(values)})
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out", default=str(ROOT / "lab" / "data" / "sharded_memory.csv"))
    args = parser.parse_args()
    rows = []
    for ranks in (int(r) for r in args.ranks.split(",")):
        for strategy in args.strategies.split(","):
            launches = [one_launch(ranks, strategy, args.momentum, args.steps) for _ in range(args.launches)]
            rows.append(row_for(ranks, strategy, args.momentum, launches))
            print(" ".join(f"{k}={rows[-1][k]}" for k in COLUMNS), flush=True)
    write(Path(args.out), rows)
    print(f"wrote {args.out}")


def write(path: Path, rows: list[dict]) -> None:
    """The file's rows with those of the same strategy, size and momentum replaced by ``rows``,
    by size, then in STRATEGIES' order."""
    def key(r):
        return (str(r["strategy"]), int(r["ranks"]), float(r["momentum"]))

    new = {key(r) for r in rows}
    old = [r for r in csv.DictReader(path.open())] if path.exists() else []
    order = {s: i for i, s in enumerate(STRATEGIES)}
    merged = sorted([r for r in old if key(r) not in new] + rows,
                    key=lambda r: (int(r["ranks"]), float(r["momentum"]), order.get(r["strategy"], 99)))
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, COLUMNS)
        writer.writeheader()
        writer.writerows(merged)


if __name__ == "__main__":
    main()
