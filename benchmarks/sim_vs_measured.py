"""Simulated beside measured on this host: each run folder's step, part by part, at p = 2 and p = 1.

For every run folder given (a main job's ``make run NP=2`` output: steps.csv,
scaling.csv, the calibration in run.json), every strategy (ring, PS, auto) is
replayed on the simulated engine as ``predict`` replays it
(:mod:`mpibench.sim.hostreplay`: messages from the run's calibration, each
rank's own code charged its CPU time here times the speed ratio the run's
compute part gives). It prints, per folder, strategy and rank count, the
measured and the simulated step and each of its parts, and whether the step is
within +-25 %; then the median over the folders of each figure. Simulated
figures charge the host's CPU time, so they move with this host's load: run it
as a timing measurement (``flock /work/measure/timing.lock ...``) and record
``uptime`` beside it.

    python benchmarks/sim_vs_measured.py DIR [DIR ...] [--repeats 3] [--no-one-rank] [--strategies ring,ps,auto]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

TOLERANCE = 0.25
SHOWN = ("step_s", "compute_s", "sync_s", "rest_s", "evidence_s", "check_s")


def _line(label: str, parts: dict) -> str:
    return f"  {label:<10}" + "".join(f"{parts[k] * 1e6:11.1f}" if k in parts else f"{'':>11}" for k in SHOWN)


def _verdict(measured: float | None, simulated: float | None) -> str:
    if not measured or simulated is None:
        return "no figure"
    ratio = simulated / measured
    return f"{ratio - 1:+.0%} ({'within' if abs(ratio - 1) <= TOLERANCE else 'outside'} +-{TOLERANCE:.0%})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-one-rank", action="store_true", help="p = 2 only")
    parser.add_argument("--strategies", default="ring,ps,auto")
    args = parser.parse_args(argv)
    from mpibench.sim.process import install

    install()
    from mpibench.base.config import UsageError
    from mpibench.sim.hostreplay import compare
    from mpibench.sim.predict import read_run

    header = f"  {'':<10}" + "".join(f"{k[:-2] + ' us':>11}" for k in SHOWN)
    table: dict = {}
    for folder in map(Path, args.folders):
        try:
            info, cal = read_run(folder)
        except UsageError as exc:
            print(f"sim_vs_measured: {exc}", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory(prefix="sim-vs-measured-") as work:
            found = compare(folder, info, cal, Path(work), args.strategies.split(","), repeats=args.repeats, one_rank=not args.no_one_rank)
        for c in found:
            scales = " ".join(f"{s:.2f}" for s in c.cpu_scales)
            print(f"{folder.name} {c.strategy} p={c.ranks}: step {_verdict(c.measured.get('step_s'), c.simulated.get('step_s'))}"
                  f"  [cpu_scale {scales}]")
            print(header)
            print(_line("measured", c.measured))
            print(_line("simulated", c.simulated))
            table.setdefault((c.strategy, c.ranks), []).append(c)
    print(f"\nmedian over {len(args.folders)} folder(s) [measured | simulated]")
    print(header)
    for (strategy, ranks), found in table.items():
        med = {tag: {k: statistics.median(getattr(c, tag)[k] for c in found) for k in SHOWN
                     if all(k in getattr(c, tag) for c in found)} for tag in ("measured", "simulated")}
        print(f"{strategy} p={ranks}: step {_verdict(med['measured'].get('step_s'), med['simulated'].get('step_s'))}")
        print(_line("measured", med["measured"]))
        print(_line("simulated", med["simulated"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
