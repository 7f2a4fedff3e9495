"""MPIBENCH_PARSE_ONLY=1: a command line is parsed as a run would parse it, then nothing runs."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest


def parse(args, cwd):
    env = dict(os.environ, MPIBENCH_PARSE_ONLY="1")
    return subprocess.run([sys.executable, "-m", "mpibench", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args", [["--steps", "3", "--out", "x"],
                                  ["run", "--strategy", "ring", "--scenario", "cascade", "--out", "x"],
                                  ["sweep", "--seeds", "2", "--workers", "2,3", "--out", "x"]])
def test_good_arguments_exit_0_and_nothing_is_written(args, tmp_path):
    done = parse(args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "nothing was run" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["run", "--strategy-renamed", "ring"], ["bench", "--rounds", "x"],
                                  ["no-such-command"]])
def test_bad_arguments_fail_as_they_always_do(args, tmp_path):
    done = parse(args, tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
