"""The record files follow the writer: when it changes, no row is lost or written twice."""
import csv

import pytest

from mpibench.base.records import RunRecords


def rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


@pytest.mark.parametrize("writers", [1, 2, 4])
def test_rows_append_across_writers_without_loss_or_duplicates(tmp_path, writers):
    first = RunRecords(str(tmp_path))
    others = [RunRecords.joining(str(tmp_path)) for _ in range(writers - 1)]
    assert not any(o.steps._log for o in others)  # nothing opened until a row is written
    for step, records in enumerate([first, *others]):  # each writer takes over from the last
        records.faults.write({"scenario": "s", "strategy": "ring", "step": step, "phase": "",
                              "rank": step, "kind": "kill", "detail": f"writer {step}"})
    for r in [first, *others]:
        r.close()
    body = rows(tmp_path / "faults.csv")
    assert body[0][0] == "scenario" and sum(r[0] == "scenario" for r in body) == 1
    assert [int(r[2]) for r in body[1:]] == list(range(writers))


def test_a_new_job_truncates_and_joiners_never_do(tmp_path):
    RunRecords(str(tmp_path)).close()
    old = RunRecords.joining(str(tmp_path))
    old.steps.write({"step": 1})
    old.close()
    assert len(rows(tmp_path / "steps.csv")) == 2
    RunRecords(str(tmp_path)).close()  # a new job starts the files afresh
    assert len(rows(tmp_path / "steps.csv")) == 1
