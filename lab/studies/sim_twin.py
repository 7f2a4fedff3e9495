"""The differential matrix: every named scenario x strategy x recovery x world size on both engines.

Each case runs simulated (in this process) and as a real MPI job (batches of cases per
launch, as the sweep runs them); their correctness rows are compared byte for byte, wall-clock
``_s`` columns aside (:mod:`mpibench.sim.twin`). Writes ``OUT/twin.csv`` (one row per case:
both outcomes, the first difference, both replay commands) and ``OUT/twin.json`` (the counts),
and prints every difference with its two replay commands. Exit 0 when every case is identical,
1 when any differs.

    nice -n 15 python lab/studies/sim_twin.py OUT [--sizes 2,3,4] [--strategies ring,...]
        [--recoveries shrink,respawn] [--scenarios a,b] [--sampled N --sample-seed S] [--batch 12]
        [--reuse-mpi: only the simulated side again, against the real jobs OUT already holds]
        [--record CSV [--tag TAG]: append the counts; --record-only: append those OUT/twin.json holds]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


RECORD_COLUMNS = ["date", "tag", "cases", "identical", "differing", "sizes", "strategies", "recoveries",
                  "sampled_sweep_cases", "differing_cases", "wall_s", "launches"]


def record(a, summary: dict, differing_ids) -> None:
    import csv
    import datetime

    a.record.parent.mkdir(parents=True, exist_ok=True)
    new = not a.record.exists()
    with open(a.record, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=RECORD_COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow({"date": datetime.date.today().isoformat(), "tag": a.tag,
                         "cases": summary["cases"], "identical": summary["identical"],
                         "differing": summary["differing"], "sizes": a.sizes.replace(",", " "),
                         "strategies": a.strategies.replace(",", " "), "recoveries": a.recoveries.replace(",", " "),
                         "sampled_sweep_cases": a.sampled, "differing_cases": " ".join(differing_ids),
                         "wall_s": summary["wall_s"], "launches": 1})


def main() -> int:
    from mpibench.drive.launch import launcher_argv
    from mpibench.sim.twin import RECOVERIES, STRATEGIES, matrix_cases, run_twin, sampled_sweep_cases

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--sizes", default="2,3,4")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--recoveries", default=",".join(RECOVERIES))
    ap.add_argument("--scenarios", default="", help="named scenarios (default: all)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--sampled", type=int, default=0, help="also this many random sweep cases")
    ap.add_argument("--sample-seed", type=int, default=0)
    ap.add_argument("--matrix", choices=("yes", "no"), default="yes")
    ap.add_argument("--batch", type=int, default=12, help="cases per MPI launch")
    ap.add_argument("--mpiexec", default=None)
    ap.add_argument("--reuse-mpi", action="store_true",
                    help="compare with the real jobs an earlier run left in OUT; only the simulated side runs again")
    ap.add_argument("--tag", default="simulated vs measured", help="the record row's tag")
    ap.add_argument("--record-only", action="store_true",
                    help="run nothing: append the counts OUT/twin.json already holds to --record")
    ap.add_argument("--record", type=Path, default=None,
                    help="append the counts to this CSV (the manual's is lab/data/sim-twin.csv)")
    a = ap.parse_args()
    if a.record_only:
        if a.record is None or not (a.out / "twin.json").exists():
            print("sim_twin: --record-only needs --record and an OUT holding twin.json", file=sys.stderr)
            return 2
        summary = json.loads((a.out / "twin.json").read_text())
        record(a, summary, sorted(summary["differences"]))
        return 0
    sizes = tuple(int(x) for x in a.sizes.split(","))
    cases = []
    if a.matrix == "yes":
        cases += matrix_cases(sizes, tuple(a.strategies.split(",")), tuple(a.recoveries.split(",")), a.steps,
                              scenarios=[s for s in a.scenarios.split(",") if s] or None)
    if a.sampled:
        cases += sampled_sweep_cases(a.sampled, a.sample_seed, sizes, a.steps)
    start = time.perf_counter()
    results = run_twin(cases, a.out, launcher_argv(a.mpiexec), a.batch, stream=sys.stdout, reuse_mpi=a.reuse_mpi)
    differing = [r for r in results if r.difference]
    summary = {"tag": "simulated vs measured", "cases": len(results), "identical": len(results) - len(differing),
               "differing": len(differing), "wall_s": round(time.perf_counter() - start, 1),
               "differences": {r.case.case_id: r.difference for r in differing}}
    (a.out / "twin.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"twin: {len(results)} cases, {summary['identical']} identical, {len(differing)} differing "
          f"({summary['wall_s']} s)")
    if a.record is not None:
        record(a, summary, [r.case.case_id for r in differing])
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
