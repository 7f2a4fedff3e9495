"""Worlds of thousands of ranks played out round by round (mpibench.sim.rounds, .platform, .predict).

The round-level simulation must agree with the analytic model where the
model's assumptions hold (a ring placed in rank order never shares a NIC)
and exceed it where they do not (the parameter server's all-to-all shares
each node's NIC among its ranks); recovery costs more than the step it
redoes; a platform file with a bad field is one clear error.
"""
from __future__ import annotations

import numpy as np
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


def _plat(per_node: int, placement: str = "block"):
    from dataclasses import replace

    return replace(CLUSTER_100G, ranks_per_node=per_node, placement=placement)


def _everyone_ends_with_everything(plat, strategy: str, p: int, nbytes: float) -> bool:
    """Play the rounds on sets of contributions (an independent reading of a round: every
    destination adds what its source held at the start of the round, or, without a reduction,
    takes it); all-reduce schedules of whole buffers only (rd, hier up to 16 KiB), or of segments
    that each repetition of a round carries on (hier-pipelined's chains)."""
    held = [frozenset({r}) for r in range(p)]
    for rnd in rounds.strategy_rounds(plat, strategy, p, nbytes):
        for _ in range(rnd.times):
            before = list(held)
            for s, d in zip(rnd.src.tolist(), rnd.dst.tolist()):
                held[d] = held[d] | before[s] if rnd.reduced_bytes else before[s]
    return all(h == frozenset(range(p)) for h in held)


@pytest.mark.parametrize("p", [2, 3, 7, 8, 12, 64, 100])
@pytest.mark.parametrize("per_node", [1, 4, 8, 128])
@pytest.mark.parametrize("placement", ["block", "cyclic"])
def test_rd_and_hier_rounds_are_all_reduce_schedules(p, per_node, placement):
    plat = _plat(per_node, placement)
    assert _everyone_ends_with_everything(plat, "rd", p, 1024)
    assert _everyone_ends_with_everything(plat, "hier", p, 1024)


@pytest.mark.parametrize("p", [2, 4, 64, 512, 4096])
def test_rabenseifner_moves_the_bandwidth_optimal_volume(p):
    """Each core rank sends (q-1)/q of the buffer in the halving and as much in the doubling."""
    n = 1 << 20
    sent = np.zeros(p)
    for rnd in rounds.rabenseifner_rounds(p, n):
        np.add.at(sent, rnd.src, rnd.nbytes * rnd.times)
    assert sent.max() == pytest.approx(2 * (p - 1) / p * n)


@pytest.mark.parametrize("p", [256, 512, 4096])
def test_near_first_halving_keeps_the_largest_halves_on_the_node(p):
    """With ranks in node order no NIC carries more than a few whole buffers in all; dealt
    round the nodes (cyclic), the first halves all leave the node, and the notes say so."""
    plat, n = _plat(128), 1 << 20
    nic = sum(rounds.nic_load_bytes(plat, r, p) * r.times for r in rounds.rabenseifner_rounds(p, n))
    assert nic <= 2 * n
    cyclic = _plat(128, "cyclic")
    assert rounds.sync_s(cyclic, "rabenseifner", p, n) > 10 * rounds.sync_s(plat, "rabenseifner", p, n)
    assert not rounds.notes(plat, "rabenseifner", p, n)
    assert any("cross a NIC 128 at once" in s for s in rounds.notes(cyclic, "rabenseifner", p, n))


def test_ring_in_rank_order_crosses_one_nic_link_per_node_and_cyclic_all():
    p, n = 512, 1 << 24
    block, cyclic = _plat(128), _plat(128, "cyclic")
    ring = rounds.ring_rounds(p, n)
    assert rounds.nic_load_bytes(block, ring[0], p) == pytest.approx(n / p)
    assert rounds.nic_load_bytes(cyclic, ring[0], p) == pytest.approx(128 * n / p)


def test_auto_and_native_resolve_to_an_algorithm_they_have():
    for n in (8, 1 << 26):
        assert rounds.resolve(CLUSTER_100G, "auto", 512, n) in ("rd", "rabenseifner")
        assert rounds.resolve(CLUSTER_100G, "native", 512, n) == ("rd" if n <= 10 << 10 else "rabenseifner")
    assert rounds.resolve(CLUSTER_100G, "auto", 512, 8) == "rd"
    assert rounds.resolve(CLUSTER_100G, "auto", 512, 1 << 26) == "rabenseifner"


def test_a_torus_is_named_as_predicted_at_full_bisection():
    from dataclasses import replace

    torus = replace(CLUSTER_100G, topology="torus")
    assert any("torus" in s for s in rounds.notes(torus, "ring", 64, 1 << 20))
    assert not any("torus" in s for s in rounds.notes(CLUSTER_100G, "ring", 64, 1 << 20))


@pytest.mark.parametrize("p", [2, 8, 64, 4096])
def test_zero_ring_costs_what_the_ring_does_and_zero_halving_moves_rabenseifners_volume(p):
    """Reduce-scatter plus all-gather of the stepped shards: the ring's rounds, and for halving
    the bandwidth-optimal 2 (p-1)/p of the buffer per rank, as Rabenseifner."""
    n = 1 << 20
    assert rounds.sync_s(CLUSTER_100G, "zero-ring", p, n) == rounds.sync_s(CLUSTER_100G, "ring", p, n)
    sent = np.zeros(p)
    for rnd in rounds.zero_halving_rounds(p, n):
        np.add.at(sent, rnd.src, rnd.nbytes * rnd.times)
    assert sent.max() == pytest.approx(2 * (p - 1) / p * n)


@pytest.mark.parametrize("p", [512, 4096])
def test_zero_halvings_far_first_order_sends_its_largest_halves_through_the_nic_and_says_so(p):
    """Core rank v halves as bit_reverse(v) so that it ends on shard v: in real ranks its first
    partner is the farthest, so with ranks filling nodes in order its largest halves leave the node,
    where Rabenseifner's (near first) stay on it."""
    plat, n = _plat(128), 1 << 24
    assert rounds.sync_s(plat, "zero-halving", p, n) > 10 * rounds.sync_s(plat, "rabenseifner", p, n)
    said = rounds.notes(plat, "zero-halving", p, n)
    assert any("cross a NIC 128 at once" in s and "far partners first" in s for s in said), said
    assert not rounds.notes(plat, "rabenseifner", p, n)


@pytest.mark.parametrize("n", [8, 64 << 10, 64 << 20])
def test_hier_is_predicted_at_4096_and_only_rd_is_warned_of_its_nic_pattern(n):
    """hier sends one leader per node through each NIC, so it never shares one; rd in rank order
    sends every rank of a node through it at once, and the note names it once that matters."""
    plat, p = _plat(128), 4096
    assert 0 < rounds.sync_s(plat, "hier", p, n) < float("inf")
    assert not any("cross a NIC" in s for s in rounds.notes(plat, "hier", p, n))
    rd_notes = rounds.notes(plat, "rd", p, n)
    assert (n >= 64 << 10) == any("rd: its largest messages" in s for s in rd_notes), rd_notes


def test_the_collective_table_covers_the_sharded_strategies():
    from mpibench.sim.table import collective_rows

    rows = collective_rows(_plat(128), [4096], [64 << 20], ("zero-ring", "zero-halving"))
    assert [r.strategy for r in rows] == ["zero-ring", "zero-halving"]
    assert "far partners first" in rows[1].notes and rows[0].sync_s < rows[1].sync_s


@pytest.mark.parametrize("p", [3, 7, 8, 12, 64, 100])
@pytest.mark.parametrize("per_node", [4, 8, 128])
@pytest.mark.parametrize("placement", ["block", "cyclic"])
def test_hier_pipelined_chains_are_an_all_reduce_schedule(p, per_node, placement, monkeypatch):
    """At 1 MiB every node of three ranks or more takes the chain; the leaders run rd (as up to
    16 KiB) so that the whole schedule can be played on sets."""
    monkeypatch.setattr(rounds, "HIER_SMALL_BYTES", 1 << 30)
    plat, n = _plat(per_node, placement), 1 << 20
    assert rounds.pipelines(plat, p, n)
    assert _everyone_ends_with_everything(plat, "hier-pipelined", p, n)


@pytest.mark.parametrize("p", [3, 16, 128])
@pytest.mark.parametrize("n", [1 << 20, 3 << 20, (1 << 20) + 5])
def test_hier_pipelined_on_one_node_costs_two_chains_of_segment_steps(p, n):
    """One node of L ranks, S = ceil(n / 8 KiB) segments: reduce up the chain and broadcast down,
    L - 1 + S - 1 steps of n / S bytes each way, the reduce's steps each reducing a segment."""
    plat = _plat(128)
    s = -(-n // 8192)
    piece, steps = n / s, p - 1 + s - 1
    step_s = plat.node_latency_s + piece / plat.node_bytes_per_s
    expected = 2 * steps * step_s + steps * piece / plat.gamma_bytes_per_s
    assert rounds.segments(n) == s
    assert rounds.sync_s(plat, "hier-pipelined", p, n) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("p", [512, 4096])
def test_hier_pipelined_beats_hier_on_many_ranks_per_node_for_large_buffers_and_is_hier_for_small(p):
    plat = _plat(128)
    for n in (1 << 20, 64 << 20):
        assert rounds.sync_s(plat, "hier-pipelined", p, n) < 0.7 * rounds.sync_s(plat, "hier", p, n)
        assert any("hier-pipelined" in s for s in rounds.notes(plat, "hier", p, n))
        assert any("modelled only" in s and "segments" in s for s in rounds.notes(plat, "hier-pipelined", p, n))
    for n in (8, 4096):
        assert rounds.sync_s(plat, "hier-pipelined", p, n) == rounds.sync_s(plat, "hier", p, n)
        assert not any("hier-pipelined" in s for s in rounds.notes(plat, "hier", p, n))


@pytest.mark.parametrize("p", [2, 5, 64])
@pytest.mark.parametrize("n", [8, 16 << 10, 1 << 20])
def test_with_one_rank_per_node_hier_pipelined_is_hiers_leaders_stage(p, n):
    plat = _plat(1)
    leaders = "rd" if n <= rounds.HIER_SMALL_BYTES else "rabenseifner"
    assert rounds.sync_s(plat, "hier-pipelined", p, n) == rounds.sync_s(plat, "hier", p, n)
    assert rounds.sync_s(plat, "hier-pipelined", p, n) == rounds.sync_s(plat, leaders, p, n)
    assert not rounds.notes(plat, "hier-pipelined", p, n)


def test_hier_pipelined_of_nothing_and_of_one_rank():
    plat = _plat(8)
    assert rounds.segments(0) == 1
    assert rounds.sync_s(plat, "hier-pipelined", 1, 1 << 20) == 0.0
    assert rounds.strategy_rounds(plat, "hier-pipelined", 1, 1 << 20) == []
    assert rounds.sync_s(plat, "hier-pipelined", 64, 0) == rounds.sync_s(plat, "hier", 64, 0) > 0  # latencies alone


def test_run_refuses_hier_pipelined_in_one_line_and_predict_models_it(tmp_path):
    """Modelled only: no class in mpibench/sync runs it, so run refuses it before anything starts."""
    import csv
    import subprocess
    import sys

    refused = subprocess.run([sys.executable, "-m", "mpibench", "run", "--strategy", "hier-pipelined"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "modelled only" in refused.stderr
    out = tmp_path / "t.csv"
    done = subprocess.run([sys.executable, "-m", "mpibench", "predict", "--ranks", "512", "--sizes", "8,1M",
                           "--strategies", "hier,hier-pipelined", "--platform", "platforms/betzy_4x128.toml",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = {(r["strategy"], r["bytes"]): float(r["sync_s"]) for r in csv.DictReader(out.open())}
    assert rows["hier-pipelined", "8"] == rows["hier", "8"]
    assert rows["hier-pipelined", "1048576"] < rows["hier", "1048576"]
