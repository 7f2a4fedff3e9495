"""The self-test's trials on the simulated engine (see test_sim_selftest)."""
import json
import sys
import time
from pathlib import Path

from mpibench.selftest.sim import run_selftest_sim

start = time.perf_counter()
results = run_selftest_sim(Path(sys.argv[1]))
print("RESULT " + json.dumps({
    "trials": {r.trial.label: {"ok": r.ok, "text": r.text, "first": r.first_violation,
                               "expect_caught": r.trial.expect_caught, "mutant": r.trial.mutant}
               for r in results},
    "wall_s": time.perf_counter() - start}))
