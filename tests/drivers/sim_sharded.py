"""Every named scenario under the sharded strategies, simulated, both recoveries (see test_sharded).

One child process runs every case in-process on the simulated engine (one
``run`` each would pay the interpreter's start-up per case) and prints the
outcome of each as JSON after ``RESULT``.
"""
import json
import sys
import time
from pathlib import Path

from mpibench.drive.cases import Case
from mpibench.faults import load_schedule
from mpibench.faults.scenarios import ALL_SCENARIOS
from mpibench.sim.cases import run_case_sim

out, ranks = Path(sys.argv[1]), int(sys.argv[2])
wanted = sys.argv[3].split(",") if len(sys.argv) > 3 else list(ALL_SCENARIOS)  # scenario names
start = time.perf_counter()
found = {}
for strategy in ("zero-ring", "zero-halving"):
    for name, (_, smallest) in ALL_SCENARIOS.items():
        if ranks < smallest or name not in wanted:
            continue
        for recovery in ("shrink", "respawn"):
            case = Case(f"{strategy}-{name}-{recovery}", 0, ranks, strategy, recovery, 4,
                        load_schedule(name, ranks))
            o = run_case_sim(case, out / case.case_id)
            found[case.case_id] = {"outcome": o.outcome, "first": o.first_violation, "checks": o.checks}
print("RESULT " + json.dumps({"cases": found, "wall_s": time.perf_counter() - start}))
