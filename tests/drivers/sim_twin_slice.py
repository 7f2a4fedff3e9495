"""A slice of the differential matrix on both engines (see test_sim_twin): OUT SCENARIO:STRATEGY:RECOVERY:P[:FLAG]...
(FLAG: a run flag every such case also takes, e.g. overlap)"""
import json
import sys
from pathlib import Path

from mpibench.drive.launch import launcher_argv
from mpibench.sim.twin import matrix_cases, run_twin

out = Path(sys.argv[1])
cases = []
for spec in sys.argv[2:]:
    scenario, strategy, recovery, p, *flags = spec.split(":")
    cases += matrix_cases((int(p),), (strategy,), (recovery,), steps=5, scenarios=[scenario],
                          extra=tuple(f"--{f}" for f in flags))
results = run_twin(cases, out, launcher_argv(None), batch_size=len(cases))
print("RESULT " + json.dumps({r.case.case_id: {"difference": r.difference, "sim": r.sim.outcome,
                                               "mpi": r.mpi.outcome if r.mpi else None} for r in results}))
