"""Collective tables at scale (mpibench.sim.table, ``predict --ranks --sizes``).

Every row is tagged simulated, names the algorithm that runs, and agrees
with the round model it reports; sizes parse with K/M suffixes and bad ones
are one line; the command prints the table and writes the CSV.
"""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from mpibench.base.config import UsageError
from mpibench.sim import rounds
from mpibench.sim.platform import CLUSTER_100G
from mpibench.sim.table import TABLE_STRATEGIES, collective_rows, parse_counts


def test_every_row_is_simulated_and_is_the_round_model():
    rows = collective_rows(CLUSTER_100G, [2, 64, 100], [8, 1 << 20])
    assert len(rows) == len(TABLE_STRATEGIES) * 3 * 2
    for r in rows:
        assert r.tag == "simulated"
        assert r.sync_s == rounds.sync_s(CLUSTER_100G, r.strategy, r.ranks, r.bytes)
        assert r.algorithm == rounds.resolve(CLUSTER_100G, r.strategy, r.ranks, r.bytes)


@pytest.mark.parametrize("text, expected", [("8", [8]), ("8,64K,1M", [8, 65536, 1 << 20]), ("2g", [1 << 31])])
def test_counts_parse_with_suffixes(text, expected):
    assert parse_counts(text, "--sizes") == expected


@pytest.mark.parametrize("text", ["", "x", "8,,9", "0", "-4", "1.5K"])
def test_bad_counts_are_a_usage_error(text):
    with pytest.raises(UsageError, match="--sizes"):
        parse_counts(text, "--sizes")


def test_the_command_prints_the_table_and_writes_the_csv(tmp_path):
    out = tmp_path / "t.csv"
    done = subprocess.run([sys.executable, "-m", "mpibench", "predict", "--ranks", "512", "--sizes", "1M",
                           "--strategies", "rabenseifner,hier", "--placement", "cyclic", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[simulated]" in done.stdout and "cross a NIC" in done.stdout
    rows = list(csv.DictReader(out.open()))
    assert [r["strategy"] for r in rows] == ["rabenseifner", "hier"] and {r["tag"] for r in rows} == {"simulated"}
    bad = subprocess.run([sys.executable, "-m", "mpibench", "predict", "--sizes", "1Q"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
