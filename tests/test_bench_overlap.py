"""``bench --profile`` (mpibench.job.bench.overlap, mpibench.results.overlaptable): a real model's
buckets all-reduced during a timed stand-in for its backward pass, measured at p = 2.

The bucket schedule is checked against the profile itself; the measured step against what the
measurement means: with overlap off nothing is hidden (the exposed sync is every bucket's sync),
with it on the step never waits more than it would without; every bucket's sum is checked
exactly and a wrong one is counted; launches are combined one row per launch."""
from __future__ import annotations

import csv
import sys

import numpy as np
import pytest

from mpirun import mpi_env, mpirun_command, run_cli, run_command

from mpibench.job.bench.overlap import Buffers, OverlapPlan, bucket_schedule, layer_seconds
from mpibench.profiles import profile


@pytest.mark.parametrize("name", ["resnet50", "gpt2", "bert-large"])
@pytest.mark.parametrize("policy", ["ddp", "horovod", "none"])
def test_every_tensor_is_in_one_bucket_started_once_its_gradients_are_ready(name, policy):
    model = profile(name)
    plan = OverlapPlan(model, policy, local_batch=4, flops_per_s=1e12)
    schedule = bucket_schedule(plan)
    placed = sorted(i for _, b in schedule for i in b.tensors)
    assert placed == list(range(len(model.tensors)))
    layer_s = layer_seconds(model, 4, 1e12)
    backward_s = sum(layer_s)
    assert backward_s == pytest.approx(2 * sum(t.forward_flops_per_sample for t in model.tensors) * 4 / 1e12)
    for start_s, bucket in schedule:
        # a tensor's gradient is ready once the layers from the last down to it have run
        ready = max(sum(layer_s[i:]) for i in bucket.tensors)
        assert ready - 1e-9 <= start_s <= backward_s + 2e-3  # Horovod: at the next 1 ms cycle
    assert sum(b.nbytes for _, b in schedule) == model.nbytes


def test_a_wrong_element_in_any_bucket_is_counted():
    schedule = bucket_schedule(OverlapPlan(profile("resnet50"), "ddp", local_batch=1))
    bufs = Buffers(schedule, rank=0, size=1)
    for send, recv in zip(bufs.sends, bufs.recvs):
        recv[:] = send  # one rank: the sum is its own buffer
    assert bufs.errors() == 0
    bufs.recvs[-1][-1] += 1.0
    assert bufs.errors() == 1


def steps_of(out):
    with open(out / "overlap.csv") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.mpi
@pytest.mark.parametrize("overlap", ["--overlap", "--no-overlap"])
def test_the_measured_step_at_two_ranks(tmp_path, overlap):
    out = tmp_path / "out"
    job = run_command([*mpirun_command(), "-n", "2", sys.executable, "-m", "mpibench", "bench", "--profile",
                       "resnet50", "--flops-per-s", "1e14", "--local-batch", "8", "--rounds", "3", "--warmup", "1",
                       overlap, "--out", str(out)], timeout=180, env=mpi_env(), cwd=tmp_path)
    assert job.returncode == 0, job.text[-3000:]
    rows = steps_of(out)
    assert len(rows) == 3 and all(r["errors"] == "0" and r["tag"] == "measured" for r in rows), rows
    stand_in_s = sum(layer_seconds(profile("resnet50"), 8, 1e14))
    for r in rows:
        backward, sync, exposed, step = (float(r[k]) for k in ("backward_s", "sync_s", "exposed_s", "step_s"))
        # each figure is the slowest rank's: the step is at most its slowest backward plus exposed sync
        assert backward >= stand_in_s and max(backward, exposed) <= step <= backward + exposed + 1e-6, r
        if overlap == "--no-overlap":  # every bucket after the backward pass: all of it exposed
            # exposed also holds the slowest rank's wait for the other's backward to end, which a
            # second pytest worker sharing the 2 cores stretches by milliseconds
            assert sync <= exposed <= sync + 2e-2, r
    assert "exposed" in job.stdout and "[measured]" in job.stdout


@pytest.mark.mpi
def test_launches_give_one_row_each_and_the_medians_over_them(tmp_path):
    out = tmp_path / "out"
    job = run_cli(["bench", "--profile", "gpt2", "--flops-per-s", "1e14", "--local-batch", "2", "--rounds", "2",
                   "--warmup", "0", "--launches", "2", "--np", "2", "--out", str(out)], timeout=300)
    assert job.returncode == 0, job.text[-3000:]
    table = steps_of(out)
    assert [r["launch"] for r in table] == ["1", "2"] and all(r["steps"] == "2" for r in table), table
    assert "over 2 launches" in job.stdout and "exposed" in job.stdout


@pytest.mark.parametrize("args,words", [
    (["--profile", "alexnet"], "unknown profile 'alexnet'"),
    (["--profile", "gpt2", "--flops-per-s", "0"], "--flops-per-s must be positive"),
    (["--profile", "gpt2", "--rounds", "0"], "--rounds (steps) must be at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    job = run_cli(["bench", *args, "--out", str(tmp_path / "out")], timeout=60)
    assert job.returncode == 2 and words in job.stderr and "Traceback" not in job.text, job.text[-2000:]
    assert not (tmp_path / "out").exists()
