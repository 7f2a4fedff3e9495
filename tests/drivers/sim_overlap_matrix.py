"""Every named scenario x recovery with run --overlap on 3 simulated ranks (see test_overlap_scenarios):
OUT [SCENARIO:RECOVERY ...]; with none, the whole matrix. Each case is judged as a sweep case is,
and a blocking twin of it (no --overlap) runs beside it for the rows to be compared."""
import csv
import json
import sys
from pathlib import Path

from mpibench.drive.cases import Case
from mpibench.faults.scenarios import ALL_SCENARIOS, build
from mpibench.sim.cases import run_case_sim

WORKERS, STEPS = 3, 5


def rows(run_dir: Path, name: str) -> list[dict]:
    try:
        with open(run_dir / name, newline="") as f:
            # wall-clock columns aside, and the scenario column (the case's own schedule file)
            return [{k: v for k, v in r.items() if not k.endswith("_s") and k != "scenario"} for r in csv.DictReader(f)]
    except OSError:
        return []


out = Path(sys.argv[1])
specs = [s.split(":") for s in sys.argv[2:]] or [(n, r) for n in ALL_SCENARIOS for r in ("shrink", "respawn")]
found = {}
for scenario, recovery in specs:
    cases = {flag: Case(f"{scenario}-{recovery}{flag}", 0, WORKERS, "native", recovery, STEPS,
                        build(scenario, WORKERS), ("--overlap",) if flag else ()) for flag in ("-overlap", "")}
    outcome = {}
    for flag, case in cases.items():
        folder = out / case.case_id
        result = run_case_sim(case, folder)
        run_dir = folder / "run"
        config = next(iter(run_dir.glob("history/*/case.json")), None)
        outcome[flag] = {"outcome": result.outcome, "first": result.first_violation, "checks": result.checks,
                         "faults": rows(run_dir, "faults.csv"), "steps": rows(run_dir, "steps.csv"),
                         "overlap": json.loads(config.read_text())["config"].get("overlap") if config else None,
                         "replay": result.replay}
    found[f"{scenario}:{recovery}"] = {"overlapped": outcome["-overlap"], "blocking": outcome[""]}
print("RESULT " + json.dumps(found))
