"""Real MPI runs with one planted bug each: the checker names it, by the invariant that owns
it, at the step where it happens; the same runs without the bug pass.

The verdict is taken from ``python -m mpibench check DIR`` (the launcher's own status can be 0
after a violation under ULFM). Small uneven shards (100 samples, batch 16, 3 workers: shards
of 45, 33 and 22 samples) make epochs end on short batches within the first steps.
"""
import json

import pytest

from mpirun import run_cli, run_mpi

pytestmark = pytest.mark.mpi

SCHEDULES = {
    "none": None,
    "kill2@3": '[[kill]]\nrank = 2\nstep = 3\nphase = "before_compute"\n',
    "kill1@2": '[[kill]]\nrank = 1\nstep = 2\nphase = "before_compute"\n',
    "kill2@1-after-apply": '[[kill]]\nrank = 2\nstep = 1\nphase = "after_apply"\n',
    "cut2@1-3": "[[partition]]\nsides = [[0, 1], [2]]\nfrom_step = 1\nto_step = 3\n",
    "late2@1-2": '[[delay]]\nrank = 2\nsteps = [1, 2]\nseconds = 0.6\nwhere = "compute"\n',
}
LATE = ["--straggler-deadline", "0.15"]

# mutant, strategy, schedule, recovery, extra options, (step, invariant) that must catch it
BUGS = [
    # the survivors' wrong model of the others' walks shows first in steps.csv's epoch ends (step 1),
    # then in the replacement's batches (step 3)
    ("resume-epoch-start", "native", "kill2@3", "respawn", [], (1, "data")),
    ("shard-swap", "native", "kill1@2", "shrink", [], (2, "data")),
    ("drop-tail", "native", "none", "shrink", [], (1, "data")),
    ("no-reshuffle", "native", "none", "shrink", [], (2, "data")),
    ("keep-aborted", "native", "kill2@1-after-apply", "shrink", ["--check-every", "2"], (1, "equivalence")),
    ("minority-commit", "native", "cut2@1-3", "shrink", [], (1, "membership")),
    ("skip-member", "ring", "none", "shrink", [], (0, "membership")),
    # what a non-committing or late record claims, a live member's missing evidence
    ("stall-claims-batch", "native", "cut2@1-3", "shrink", [], (1, "contract")),
    ("lone-recorder", "native", "none", "shrink", [], (0, "contract")),
    ("late-keeps-batch", "native", "late2@1-2", "shrink", LATE, (1, "contract")),
    ("abort-advances", "native", "kill2@1-after-apply", "shrink", [], (1, "data")),
    # a lie in a copy of the step's claims other than the lowest worker's, and in steps.csv
    ("copy-lies", "ring", "none", "shrink", [], (2, "accounting")),
    ("late-copy-lies", "native", "late2@1-2", "shrink", LATE, (1, "equivalence")),
    ("steps-csv-lies", "native", "none", "shrink", [], (2, "accounting")),
    # a wrong update on a step the online check skips: the verdict of record compares every step
    ("step3-lr", "native", "none", "shrink", ["--check-every", "4"], (3, "equivalence")),
    # non-finite values in the reduced buffer: judged at their step, the job ends normally
    ("nan-count", "native", "none", "shrink", [], (2, "accounting")),
    ("nan-grad", "native", "none", "shrink", [], (2, "equivalence")),
    # loss statistics: float32 accumulation, and a stale report
    ("float32-loss", "native", "none", "shrink", [], (0, "equivalence")),
    ("stale-loss", "native", "none", "shrink", [], (1, "equivalence")),
]
THINNED = {"step3-lr"}  # the online check skips its step's reference; the final verdict names it
CONTROLS = sorted({(strategy, schedule, recovery, tuple(extra)) for _, strategy, schedule, recovery, extra, _ in BUGS})


def run_case(tmp_path, strategy, schedule, recovery, extra, mutant=None):
    scenario = "none"
    if SCHEDULES[schedule]:
        path = tmp_path / f"{schedule}.toml"
        path.write_text(f'name = "{schedule}"\n' + SCHEDULES[schedule])
        scenario = str(path)
    out = tmp_path / "run"
    args = ["run", "--strategy", strategy, "--scenario", scenario, "--recovery", recovery, "--steps", "6",
            "--samples", "100", "--batch-size", "16", *extra]
    if mutant:
        args += ["--run-parts", f"mpibench.selftest.variants:{mutant}"]
    job = run_mpi(3, args, out, timeout=150)
    verdict = run_cli(["check", str(out)], timeout=120)
    return job, verdict, out


def failing(out, step):
    rows = [line.split(",") for line in (out / "invariants.csv").read_text().splitlines()[1:]]
    return {r[4] for r in rows if int(r[3]) == step and r[5] != "true"}


@pytest.mark.parametrize("mutant,strategy,schedule,recovery,extra,caught", BUGS, ids=[b[0] for b in BUGS])
def test_each_bug_class_is_caught_where_it_happens(tmp_path, mutant, strategy, schedule, recovery, extra, caught):
    job, verdict, out = run_case(tmp_path, strategy, schedule, recovery, extra, mutant)
    assert verdict.returncode == 1, job.text[-3000:] + verdict.text
    first = json.loads((out / "verdict.json").read_text())["first_violation"]
    step, invariant = caught
    assert first["step"] == step, first
    assert invariant in failing(out, step), (first, failing(out, step))
    assert "Traceback" not in job.text and job.returncode == 1, job.text[-3000:]  # ended normally, exit 1
    if mutant in THINNED:
        assert f"step {step}:" not in job.stdout and f"step {step} invariant '{invariant}'" in job.stdout
    else:
        assert f"violation: 000-" in job.stdout and f"step {step}" in job.stdout  # named online, during the run


@pytest.mark.parametrize("strategy,schedule,recovery,extra", CONTROLS, ids=["-".join(c[:3]) for c in CONTROLS])
def test_the_same_runs_without_the_bug_pass(tmp_path, strategy, schedule, recovery, extra):
    job, verdict, out = run_case(tmp_path, strategy, schedule, recovery, list(extra))
    assert verdict.returncode == 0, job.text[-3000:] + verdict.text
    before = {n: (out / n).read_bytes() for n in ("verdict.json", "invariants.csv")}
    assert run_cli(["check", str(out)]).returncode == 0
    assert {n: (out / n).read_bytes() for n in before} == before  # re-checking reproduces both files
    if recovery == "respawn":
        case = next((out / "history").iterdir())
        assert any(p.name.startswith("worker-2.joined-0003") for p in case.iterdir())
        (case / "worker-1.jsonl").unlink()
        gone = run_cli(["check", str(out)])
        assert gone.returncode == 3 and "worker-1.jsonl missing" in gone.stdout
