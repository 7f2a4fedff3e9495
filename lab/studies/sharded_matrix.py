"""Every named scenario under the sharded strategies (hsdp's replicas included), both recoveries, on MPI and simulated.

One row per (engine, world size, strategy, scenario, recovery, momentum) in
``lab/data/sharded_matrix.csv``: what the run came to (the checker's
verdict on the case's history, read by the drivers' own judge), or, for a
combination that :func:`mpibench.engine.optimizer.refusal` names (optimizer
state that no survivor would hold), whether the run was refused as it must be
(exit 2, one line, no output folder). Rows of a chunk replace that chunk's
earlier rows, so the matrix is built in pieces that each fit a short job:

    python lab/studies/sharded_matrix.py --engine mpi --workers 3
    python lab/studies/sharded_matrix.py --engine sim --workers 2,3,4 --momentum 0,0.9
    python lab/studies/sharded_matrix.py --engine mpi --workers 3 --strategies hsdp --momentum 0,0.9

Real runs go through the sweep driver's batches (``--cases-per-launch`` cases per
``mpirun``; a finding from a batch is run again alone, as ``sweep`` does) under
``MPIBENCH_MPIEXEC`` or the discovered launcher; refused combinations are launched
one each (``--refusals-on-mpi`` limits that to some world sizes: the refusal is
decided before MPI is used, by the same code on both engines).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import fcntl
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STRATEGIES = ("zero-ring", "zero-halving", "hsdp")
RECOVERIES = ("shrink", "respawn")
STEPS = 5  # the scenarios' faults fall on steps 1-3; one step after the last heal
COLUMNS = ("engine", "workers", "strategy", "scenario", "recovery", "momentum", "expected", "outcome",
           "steps", "checks", "violations", "first_violation", "faults_injected", "alone", "date_utc")
KEY = ("engine", "workers", "strategy", "scenario", "recovery", "momentum")


@dataclass(frozen=True)
class Cell:
    engine: str
    workers: int
    strategy: str
    scenario: str
    recovery: str
    momentum: float

    @property
    def case_id(self) -> str:
        return f"{self.strategy}-{self.scenario}-{self.recovery}-n{self.workers}-m{self.momentum:g}"

    def refused(self) -> str | None:
        """Why the run must be refused before it starts, or None (the production rule is
        the one under test here, so a wrong rule shows as an outcome that is not expected)."""
        from mpibench.engine.optimizer import refusal
        from mpibench.faults import load_schedule

        schedule = load_schedule(self.scenario, self.workers)
        deadline = dict(schedule.options).get("straggler_deadline", 0.0)
        return refusal(self.strategy, self.momentum, self.recovery, schedule, deadline)

    def case(self):
        from mpibench.drive.cases import Case
        from mpibench.faults import load_schedule

        extra = ("--momentum", f"{self.momentum:g}") if self.momentum else ()
        return Case(self.case_id, 0, self.workers, self.strategy, self.recovery, STEPS,
                    load_schedule(self.scenario, self.workers), extra)


def cells(engine: str, workers: list[int], momenta: list[float], scenarios: list[str],
          strategies=STRATEGIES) -> list[Cell]:
    from mpibench.faults.scenarios import ALL_SCENARIOS

    return [Cell(engine, p, s, name, r, mu) for p in workers for mu in momenta for s in strategies
            for name in scenarios if p >= ALL_SCENARIOS[name][1] for r in RECOVERIES]


def refusal_row(cell: Cell, returncode, stderr: str, folder_made: bool) -> dict:
    """A refused combination passes only as exit 2 with one error line and no output folder."""
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("[")]
    said = lines[-1] if lines else ""
    ok = returncode == 2 and said.startswith("mpibench: error:") and "optimizer state" in said and not folder_made
    return row(cell, "refused", "refused" if ok else f"not refused (exit {returncode}{', folder made' if folder_made else ''})",
               first=said[:200])


def row(cell: Cell, expected: str, outcome: str, steps="", checks="", violations="", first="",
        faults="", alone="") -> dict:
    return {"engine": cell.engine, "workers": cell.workers, "strategy": cell.strategy, "scenario": cell.scenario,
            "recovery": cell.recovery, "momentum": f"{cell.momentum:g}", "expected": expected, "outcome": outcome,
            "steps": steps, "checks": checks, "violations": violations, "first_violation": first,
            "faults_injected": faults, "alone": alone,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")}


def outcome_row(cell: Cell, o) -> dict:
    faults = " ".join(f"{k}={v}" for k, v in sorted(o.faults_injected.items()))
    return row(cell, "ok", o.outcome, o.steps, o.checks, o.violations, o.first_violation, faults, o.alone)


def run_sim(todo: list[Cell], out: Path) -> list[dict]:
    from mpibench.sim.cases import run_case_sim

    rows = []
    for cell in todo:
        folder = out / cell.case_id
        shutil.rmtree(folder, ignore_errors=True)
        o = run_case_sim(cell.case(), folder)
        if cell.refused():
            rows.append(refusal_row(cell, o.job.returncode, o.job.stderr_tail, (folder / "run").exists()))
        else:
            rows.append(outcome_row(cell, o))
        print(f"{cell.case_id}: {rows[-1]['outcome']}", flush=True)
    return rows


def run_mpi(todo: list[Cell], out: Path, per_launch: int, deadline_s: float) -> list[dict]:
    from mpibench.drive.launch import launcher_argv, mpibench_command, run_job
    from mpibench.drive.sweep import SweepSettings, run_sweep

    mpiexec = launcher_argv()
    runs = [c for c in todo if not c.refused()]
    by_id = {c.case_id: c for c in runs}
    settings = SweepSettings(out / "sweep", mpiexec, jobs=1, case_deadline_s=deadline_s, shrink_runs=0,
                             cases_per_launch=per_launch)
    rows = [outcome_row(by_id[o.case.case_id], o) for o in run_sweep([c.case() for c in runs], settings)] if runs else []
    for cell in (c for c in todo if c.refused()):
        folder = out / "refused" / cell.case_id
        shutil.rmtree(folder, ignore_errors=True)
        case = cell.case()
        args = case.run_args(Path(cell.scenario), folder / "run")
        args[args.index("--scenario") + 1] = cell.scenario  # the named scenario, as a user runs it
        job = run_job(mpibench_command(mpiexec, cell.workers, args), folder / "log", 120)
        rows.append(refusal_row(cell, job.returncode, job.stderr_tail, (folder / "run").exists()))
        print(f"{cell.case_id}: {rows[-1]['outcome']}", flush=True)
    return rows


def merge(path: Path, new: list[dict]) -> list[dict]:
    """The file's rows with those of the same key replaced by ``new``, in a stable order (under a
    lock: chunks on the two engines may finish at the same time)."""
    with open(Path(tempfile.gettempdir()) / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _merge(path, new)


def _merge(path: Path, new: list[dict]) -> list[dict]:
    old = list(csv.DictReader(path.open())) if path.exists() else []
    keys = {tuple(str(r[k]) for k in KEY) for r in new}
    rows = [r for r in old if tuple(r[k] for k in KEY) not in keys] + new
    order = {n: i for i, n in enumerate(("mpi", "sim"))}
    rows.sort(key=lambda r: (order.get(r["engine"], 9), float(r["momentum"]), int(r["workers"]), r["strategy"],
                             r["scenario"], r["recovery"]))
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    write_summary(path.with_name(path.stem + "_summary.csv"), rows)
    return rows


def write_summary(path: Path, rows: list[dict]) -> None:
    """One line per (engine, momentum, world size, strategies: hsdp apart, its replicas change what
    is refused): how many runs passed and how many combinations were refused, each of how many,
    and which cell did not come out as expected."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        family = "hsdp" if r["strategy"] == "hsdp" else "zero-ring zero-halving"
        groups.setdefault((r["engine"], f"{float(r['momentum']):g}", r["workers"], family), []).append(r)
    columns = ("engine", "momentum", "workers", "strategies", "runs", "runs_passed", "refusals",
               "refusals_as_expected", "not_as_expected")
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, columns)
        writer.writeheader()
        for (engine, momentum, workers, family), group in sorted(groups.items(), key=lambda g: g[0][3] == "hsdp"):
            runs = [r for r in group if r["expected"] == "ok"]
            refused = [r for r in group if r["expected"] == "refused"]
            bad = [f"{r['strategy']} {r['scenario']} {r['recovery']}: {r['outcome']}" for r in group
                   if r["outcome"] != r["expected"]]
            writer.writerow({"engine": engine, "momentum": momentum, "workers": workers, "strategies": family,
                             "runs": len(runs),
                             "runs_passed": sum(r["outcome"] == "ok" for r in runs), "refusals": len(refused),
                             "refusals_as_expected": sum(r["outcome"] == "refused" for r in refused),
                             "not_as_expected": "; ".join(bad)})


def main() -> int:
    from mpibench.base.parsing import parse_list
    from mpibench.faults.scenarios import ALL_SCENARIOS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("mpi", "sim"), required=True)
    parser.add_argument("--workers", default="2,3,4")
    parser.add_argument("--momentum", default="0", help="comma-separated momenta (0: plain SGD)")
    parser.add_argument("--scenarios", default=",".join(ALL_SCENARIOS))
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--refusals-on-mpi", default=None, metavar="WORKERS",
                        help="world sizes whose refused combinations are launched on MPI (default: all)")
    parser.add_argument("--cases-per-launch", type=int, default=8)
    parser.add_argument("--case-deadline", type=float, default=180.0)
    parser.add_argument("--work", default="/tmp/sharded-matrix", help="the cases' folders")
    parser.add_argument("--csv", default=str(ROOT / "lab" / "data" / "sharded_matrix.csv"))
    args = parser.parse_args()
    scenarios = parse_list(args.scenarios, "--scenarios")
    unknown = [s for s in scenarios if s not in ALL_SCENARIOS]
    if unknown:
        print(f"sharded_matrix: unknown scenario {', '.join(unknown)}", file=sys.stderr)
        return 2
    todo = cells(args.engine, [int(w) for w in parse_list(args.workers, "--workers")],
                 [float(m) for m in parse_list(args.momentum, "--momentum")], scenarios,
                 parse_list(args.strategies, "--strategies"))
    if args.engine == "mpi" and args.refusals_on_mpi is not None:
        keep = {int(w) for w in parse_list(args.refusals_on_mpi, "--refusals-on-mpi")} if args.refusals_on_mpi else set()
        todo = [c for c in todo if not c.refused() or c.workers in keep]
    out = Path(args.work) / args.engine
    new = run_sim(todo, out) if args.engine == "sim" else run_mpi(todo, out, args.cases_per_launch, args.case_deadline)
    merge(Path(args.csv), new)
    bad = [r for r in new if r["outcome"] != r["expected"]]
    for r in bad:
        print(f"UNEXPECTED {r['engine']} n={r['workers']} {r['strategy']} {r['scenario']} {r['recovery']} "
              f"momentum={r['momentum']}: {r['outcome']} {r['first_violation']}", flush=True)
    print(f"sharded_matrix: {len(new)} rows, {len(new) - len(bad)} as expected, {len(bad)} not; wrote {args.csv}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
