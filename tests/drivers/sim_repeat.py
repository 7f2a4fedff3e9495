"""The same simulated case twice, and once with another seed (see test_sim_determinism)."""
import csv
import json
import sys
from pathlib import Path

from mpibench.sim.process import install

install()
from mpibench.base.config import RunConfig  # noqa: E402
from mpibench.sim.jobs import simulate_run  # noqa: E402

out = Path(sys.argv[1])
scenario, strategy, recovery, ranks = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])


def rows(folder: Path) -> dict:
    found = {}
    for name in ("steps.csv", "invariants.csv", "faults.csv"):
        with open(folder / name, newline="") as f:
            found[name] = [{k: v for k, v in r.items() if not k.endswith("_s")} for r in csv.DictReader(f)]
    return found


def once(seed: int, name: str) -> tuple[int, dict]:
    config = RunConfig(strategy=strategy, scenario=scenario, recovery=recovery, steps=5, seed=seed,
                       samples=150, batch_size=16)
    status, _ = simulate_run(config, str(out / name), ranks, quiet=True)
    return status, rows(out / name)


import os  # noqa: E402

fds = len(os.listdir("/proc/self/fd"))
a = once(3, "a")
b = once(3, "b")
c = once(4, "c")
print("RESULT " + json.dumps({"status": [a[0], b[0], c[0]], "same": a[1] == b[1], "other_seed_same": a[1] == c[1],
                              "steps": len(a[1]["steps.csv"]), "faults": len(a[1]["faults.csv"]),
                              "fds_left_open": len(os.listdir("/proc/self/fd")) - fds}))
