"""auto's recorded choices: stored once, read by every later run, so runs and replays of one
seed give the same correctness rows."""
import csv
import json

import pytest

from mpibench.sync import auto_choices
from mpirun import run_cli, run_mpi


def test_store_then_lookup_merges_entries(tmp_path, monkeypatch):
    path = tmp_path / "sub" / "choices.json"
    monkeypatch.setenv("MPIBENCH_AUTO_CHOICES", str(path))
    assert auto_choices.lookup(auto_choices.key(2, 64, "float32")) is None
    auto_choices.store(auto_choices.key(2, 64, "float32"), "rd")
    auto_choices.store(auto_choices.key(3, 7, "float32"), "rabenseifner")
    assert auto_choices.lookup("p=2 width=64 dtype=float32") == "rd"
    assert auto_choices.lookup("p=3 width=7 dtype=float32") == "rabenseifner"
    assert json.loads(path.read_text())["schema"] == 1


@pytest.mark.parametrize("text", ["", "{not json", '{"schema": 99, "choices": {"k": "rd"}}', "[1, 2]"])
def test_an_unreadable_record_counts_as_empty(tmp_path, monkeypatch, text):
    path = tmp_path / "choices.json"
    path.write_text(text)
    monkeypatch.setenv("MPIBENCH_AUTO_CHOICES", str(path))
    assert auto_choices.lookup("k") is None


def test_an_unwritable_record_is_left_alone(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("MPIBENCH_AUTO_CHOICES", str(blocker / "choices.json"))  # a folder that is a file
    auto_choices.store("k", "rd")  # no exception
    assert blocker.read_text() == "x"


def test_the_default_record_lives_in_the_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("MPIBENCH_AUTO_CHOICES", raising=False)
    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path))
    assert auto_choices.record_path() == str(tmp_path / "auto-choices.json")


def correctness_rows(out):
    with open(out / "steps.csv") as f:
        rows = list(csv.DictReader(f))
    return [{k: v for k, v in r.items() if not k.endswith("_s")} for r in rows]


@pytest.mark.mpi
def test_three_runs_of_auto_with_one_seed_give_identical_rows(tmp_path, monkeypatch):
    record = tmp_path / "choices.json"
    monkeypatch.setenv("MPIBENCH_AUTO_CHOICES", str(record))
    args = ["run", "--strategy", "auto", "--scenario", "none", "--steps", "5", "--seed", "3",
            "--bucket-bytes", "256", "--samples", "100", "--batch-size", "16"]
    outs = []
    for i in range(3):
        out = tmp_path / f"run{i}"
        job = run_mpi(3, args, out, timeout=150)
        assert job.returncode == 0, job.text[-3000:]
        assert run_cli(["check", str(out)]).returncode == 0
        outs.append(out)
        if i == 0:  # the first run timed its candidates and recorded what won
            choices = json.loads(record.read_text())["choices"]
            assert choices and set(choices.values()) <= {"rd", "rabenseifner"}
    rows = [correctness_rows(o) for o in outs]
    assert rows[0] == rows[1] == rows[2]
    assert all(r["algorithm"].startswith("auto:") for r in rows[0])
    assert len({(o / "invariants.csv").read_text() for o in outs}) == 1
    history = next((outs[0] / "history").iterdir()) / "worker-1.jsonl"
    algorithms = {json.loads(line).get("algorithm") for line in history.read_text().splitlines()
                  if '"kind":"attempt"' in line}
    assert algorithms == {rows[0][0]["algorithm"]}  # the choice is in every worker's history
    # The record is what decides: flipped, the next run reduces with the other candidate.
    flipped = {k: {"rd": "rabenseifner", "rabenseifner": "rd"}[v] for k, v in choices.items()}
    record.write_text(json.dumps({"schema": 1, "choices": flipped}))
    job = run_mpi(3, args, tmp_path / "flipped", timeout=150)
    assert job.returncode == 0, job.text[-3000:]
    used = correctness_rows(tmp_path / "flipped")[0]["algorithm"]
    assert used != rows[0][0]["algorithm"] and set(used[len("auto:"):].split("+")) == set(flipped.values())
