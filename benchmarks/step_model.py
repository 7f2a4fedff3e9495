"""The main job's step, measured against modelled, part by part, over repeated runs.

    python benchmarks/step_model.py DIR [DIR ...] [--max-ranks 2]

Each DIR is a main job's output folder (``make run NP=2``). Printed per folder
and then as the median over the folders: for every scaling point at p up to
``--max-ranks`` (every strategy, both scaling modes), the step time and each of
its parts (compute, reduction, commit, evidence, check, wait for the last
rank) as measured/modelled milliseconds with the model's error, the other
load on the host while it ran (cores), and whether the step is within its
tolerance (15 % at p = 1, 25 % above); a miss names the part whose measured
and modelled times lie furthest apart. Exit 0 when every median point is
within, 1 when one is not, 2 when a folder has no usable scaling.csv, 3 when
the folders hold no point.

Each folder is one launch, so the closing table judges every point over the
launches: measured / modelled step per folder (each folder's model calibrated in
that launch), its 95 % order-statistic interval over the folders, and the call
(:func:`mpibench.results.launchstats.model_call`): flagged only where the
interval excludes the tolerance band, ``agrees`` where it lies inside,
otherwise "cannot resolve at this noise (±X %)".
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mpibench.results import launchstats, stepcompare  # noqa: E402


def launch_calls(folders: list) -> list[str]:
    """Per point: measured / modelled step over the folders (launches), its interval and the call."""
    by_key: dict = {}
    for f in folders:
        for p in f.points:
            got, want = p.measured.get("step_time_s"), p.modelled.get("step_time_s")
            if got and want and want > 0:
                by_key.setdefault((p.strategy, p.mode, p.ranks), []).append(got / want)
    lines = [f"{'strategy':<12} {'mode':<8} {'p':>2} {'launches':>8} {'measured/modelled':>18} {'95 % interval':>15}  call"]
    for (strategy, mode, ranks), ratios in by_key.items():
        tol = stepcompare.tolerance(ranks)
        got = launchstats.median_interval(ratios)
        call = launchstats.model_call(got, 1 / (1 + tol), 1 / (1 - tol))
        lines.append(f"{strategy:<12} {mode:<8} {ranks:>2} {got.n:>8} {got.median:18.2f} "
                     f"{f'[{got.low:.2f}, {got.high:.2f}]':>15}  {call} ({got.coverage:.1%} coverage)")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", metavar="DIR")
    parser.add_argument("--max-ranks", type=int, default=2)
    args = parser.parse_args(argv)
    try:
        folders = [stepcompare.read_folder(d, args.max_ranks) for d in args.folders]
    except stepcompare.StepInputError as exc:
        print(f"step_model: {exc}", file=sys.stderr)
        return 2
    for f in folders:
        print(f"== {f.folder}: measured/modelled ms (model error)")
        print(stepcompare.table(f.points))
        print()
    points = stepcompare.median_points(folders)
    if not points:
        print("step_model: no scaling point at p <= {} in {} folder(s)".format(args.max_ranks, len(folders)))
        return 3
    print(f"== median over {len(folders)} folder(s): measured/modelled ms (model error)")
    print(stepcompare.table(points))
    print(stepcompare.summary_line(points))
    print(f"\n== over {len(folders)} launch(es): measured / modelled step per launch, 95 % interval, the call")
    print("\n".join(launch_calls(folders)))
    return 0 if all(p.holds for p in points) else 1


if __name__ == "__main__":
    sys.exit(main())
