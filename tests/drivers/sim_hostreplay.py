"""Replay a small run folder's ring steps on the simulated engine (see test_sim_hostreplay)."""
import json
import sys
from pathlib import Path

from mpibench.sim.process import install

install()
from mpibench.sim.hostreplay import compare  # noqa: E402
from mpibench.sim.predict import read_run  # noqa: E402

folder, work = Path(sys.argv[1]), Path(sys.argv[2])
info, cal = read_run(folder)
(found,) = compare(folder, info, cal, work, ("ring",), repeats=1, one_rank=False)
print("RESULT " + json.dumps({"ranks": found.ranks, "simulated": found.simulated, "scales": found.cpu_scales}))
