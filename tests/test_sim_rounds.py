"""Worlds of thousands of ranks played out round by round (mpibench.sim.rounds, .platform, .predict).

The round-level simulation must agree with the analytic model where the
model's assumptions hold (a ring placed in rank order never shares a NIC)
and exceed it where they do not (the parameter server's all-to-all shares
each node's NIC among its ranks); recovery costs more than the step it
redoes; a platform file with a bad field is one clear error.
"""
from __future__ import annotations

import pytest

from mpibench.base.config import UsageError
from mpibench.sim import rounds
from mpibench.sim.platform import CLUSTER_100G, load_platform

BIG = 100 << 20


@pytest.mark.parametrize("p", [2, 3, 8, 9, 64, 1024])
def test_ring_matches_its_formula_on_the_platform(p):
    plat = CLUSTER_100G
    inter = p > plat.ranks_per_node
    alpha = plat.net_latency_s if inter else plat.node_latency_s
    bw = plat.net_bytes_per_s if inter else plat.node_bytes_per_s
    piece = BIG / p
    expected = 2 * (p - 1) * (alpha + piece / bw) + (p - 1) * piece / plat.gamma_bytes_per_s
    assert rounds.sync_s(plat, "ring", p, BIG) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("p", [16, 64, 256])
def test_the_parameter_server_waits_for_shared_nics_the_ring_does_not(p):
    ring, ps = rounds.sync_s(CLUSTER_100G, "ring", p, BIG), rounds.sync_s(CLUSTER_100G, "ps", p, BIG)
    assert ps > 2 * ring


@pytest.mark.parametrize("strategy", ["ring", "ps", "rd", "rabenseifner", "auto", "native"])
@pytest.mark.parametrize("p", [1, 2, 5, 8, 33])
def test_every_strategy_has_a_time_and_recovery_costs_more(strategy, p):
    sync = rounds.sync_s(CLUSTER_100G, strategy, p, 4096)
    assert sync >= 0 and (sync > 0) == (p > 1)
    if p > 2:
        assert rounds.recovery_s(CLUSTER_100G, strategy, p, 4096, 1e-3) > rounds.sync_s(CLUSTER_100G, strategy, p - 1, 4096)


def test_auto_takes_the_faster_of_its_candidates():
    for p in (8, 100, 1000):
        for n in (1024, BIG):
            assert rounds.sync_s(CLUSTER_100G, "auto", p, n) == min(
                rounds.sync_s(CLUSTER_100G, "rd", p, n), rounds.sync_s(CLUSTER_100G, "rabenseifner", p, n))


def test_a_platform_file_is_read_and_a_bad_one_named(tmp_path):
    good = tmp_path / "c.toml"
    good.write_text("ranks_per_node = 4\n[node]\nlatency_us = 1\nbandwidth_gbps = 200\n"
                    "[network]\nlatency_us = 3\nbandwidth_gbps = 25\n[compute]\ngamma_gbps = 16\n")
    plat = load_platform(str(good))
    assert plat.ranks_per_node == 4 and plat.net_bytes_per_s == 25e9 / 8
    assert plat.network().net_alpha_s == pytest.approx(3e-6)
    bad = tmp_path / "b.toml"
    bad.write_text(good.read_text().replace("bandwidth_gbps = 25", "bandwidth_gbps = -1"))
    with pytest.raises(UsageError, match="bandwidth_gbps"):
        load_platform(str(bad))
