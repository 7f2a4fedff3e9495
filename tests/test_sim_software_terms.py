"""What the MPI library charges beside the links, in the round model (mpibench.sim.platform's
[software]): per-message overhead, the rendezvous handshake, SMPI's size-dependent latency and
bandwidth factors, and the reduction compute reported apart."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpibench.base.config import UsageError
from mpibench.sim import rounds
from mpibench.sim.platform import (CLUSTER_100G, SMPI_DEFAULT_BW_FACTOR, SMPI_DEFAULT_LAT_FACTOR, from_toml,
                                   parse_factors)
from mpibench.sim.table import TABLE_STRATEGIES

BASE = {"ranks_per_node": 8, "node": {"latency_us": 0.5, "bandwidth_gbps": 400},
        "network": {"latency_us": 2.0, "bandwidth_gbps": 100}, "compute": {"gamma_gbps": 32}}


def test_factors_read_as_simgrid_reads_them():
    # SimGrid: "if (size >= thresholdN) return valueN", for the largest such threshold
    table = parse_factors("1000:3;0:1;100:2", "t")
    assert table == ((0.0, 1.0), (100.0, 2.0), (1000.0, 3.0))
    plat = replace(CLUSTER_100G, lat_factor=table)
    assert [plat.latency_factor(n) for n in (0, 99, 100, 999, 1000, 1 << 30)] == [1, 1, 2, 2, 3, 3]
    lat = parse_factors(SMPI_DEFAULT_LAT_FACTOR, "t")
    assert [replace(CLUSTER_100G, lat_factor=lat).latency_factor(n) for n in (1024, 1426)] == [1.9503, 1.61075]
    assert replace(CLUSTER_100G, bw_factor=parse_factors(SMPI_DEFAULT_BW_FACTOR, "t")).bandwidth_factor(8) == 0.812084
    for bad in ("", "a:1", "0:0", "10:1", "0:1;5"):
        with pytest.raises(UsageError):
            parse_factors(bad, "t")


def one_exchange(plat, nbytes):
    # ranks 0 and 1 swap nbytes inside one node, then rank 0 and 8 across nodes
    intra = rounds.Round(np.array([0, 1]), np.array([1, 0]), nbytes)
    inter = rounds.Round(np.array([0, 8]), np.array([8, 0]), nbytes)
    return rounds.round_s(plat, intra, 16), rounds.round_s(plat, inter, 16)


@pytest.mark.parametrize("nbytes", [0, 8, 1500, 70_000, 1 << 24])
def test_one_message_costs_latency_bandwidth_overhead_and_handshake_as_stated(nbytes):
    text = "0:2;1426:1.5;65472:1.1"
    plat = replace(CLUSTER_100G, overhead_s=0.3e-6, eager_limit_bytes=65536, lat_factor=parse_factors(text, "t"),
                   bw_factor=parse_factors("0:0.5;65472:0.9", "t"))
    lf = 2 if nbytes < 1426 else 1.5 if nbytes < 65472 else 1.1
    bf = 0.5 if nbytes < 65472 else 0.9
    trips = 3 if nbytes > 65536 else 1  # rendezvous: a request and its answer before the data
    intra, inter = one_exchange(plat, nbytes)
    assert intra == pytest.approx(trips * 0.5e-6 * lf + nbytes / (400e9 / 8 * bf) + 2 * 0.3e-6)
    assert inter == pytest.approx(trips * 2.0e-6 * lf + nbytes / (100e9 / 8 * bf) + 2 * 0.3e-6)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(TABLE_STRATEGIES), st.sampled_from([2, 3, 8, 64, 100]), st.integers(0, 1 << 26),
       st.floats(0, 5e-6))
def test_software_costs_only_add_and_the_reduction_part_is_apart(strategy, p, nbytes, overhead_s):
    plain = rounds.sync_s(CLUSTER_100G, strategy, p, nbytes)
    charged = replace(CLUSTER_100G, overhead_s=overhead_s, lat_factor=parse_factors(SMPI_DEFAULT_LAT_FACTOR, "t"))
    assert rounds.sync_s(charged, strategy, p, nbytes) >= plain * (1 - 1e-12)
    no_compute = replace(CLUSTER_100G, reduction_compute=False)
    reduce_s = rounds.reduction_s(CLUSTER_100G, strategy, p, nbytes)
    assert 0.0 <= reduce_s <= plain
    if rounds.resolve(no_compute, strategy, p, nbytes) == rounds.resolve(CLUSTER_100G, strategy, p, nbytes):
        # (auto may choose another algorithm once reducing is free: then the two are not one algorithm's)
        assert rounds.sync_s(no_compute, strategy, p, nbytes) == pytest.approx(plain - reduce_s, abs=1e-15)
    assert rounds.reduction_s(no_compute, strategy, p, nbytes) == 0.0


def test_a_platform_file_states_its_software_terms_and_its_mistakes_are_named():
    plat = from_toml({**BASE, "software": {"overhead_us": 0.4, "eager_limit_bytes": 4096, "smpi_factors": "default"}},
                     "t")
    assert (plat.overhead_s, plat.eager_limit_bytes) == (pytest.approx(0.4e-6), 4096)
    assert plat.latency_factor(0) == 2.01467 and plat.bandwidth_factor(1 << 20) == 0.940694
    assert from_toml(BASE, "t").overhead_s == 0.0 and from_toml(BASE, "t").latency_factor(10) == 1.0
    for software, words in [({"overhead_us": -1}, "overhead_us"), ({"eager": 1}, "has no eager"),
                            ({"smpi_factors": "fast"}, "smpi_factors"), ({"smpi_lat_factor": "x"}, "factor 'x'"),
                            ({"eager_limit_bytes": 0}, "eager_limit_bytes")]:
        with pytest.raises(UsageError, match=words):
            from_toml({**BASE, "software": software}, "t")
