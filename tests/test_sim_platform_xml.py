"""Platforms as SimGrid XML (mpibench.sim.platform_xml): read a <cluster>, write one for SMPI.

A written cluster read back gives the platform it came from (latency split
over the two host links, loopback as the node); units follow SimGrid's
spelling (Gbps bits, GBps bytes); a file that is not a cluster, or a value
without a unit, is one clear error.
"""
from __future__ import annotations

import pytest

from mpibench.base.config import UsageError
from mpibench.sim.platform import CLUSTER_100G, load_platform
from mpibench.sim.platform_xml import from_simgrid_xml, hosts_needed, to_simgrid_xml


@pytest.mark.parametrize("ranks", [1, 7, 8, 9, 64, 4096])
def test_a_written_cluster_reads_back_as_the_same_platform(ranks):
    c = from_simgrid_xml(to_simgrid_xml(CLUSTER_100G, ranks), "w.xml")
    assert c.ranks_per_node == CLUSTER_100G.ranks_per_node
    assert c.net_latency_s == pytest.approx(CLUSTER_100G.net_latency_s)
    assert c.net_bytes_per_s == pytest.approx(CLUSTER_100G.net_bytes_per_s)
    assert c.node_latency_s == pytest.approx(CLUSTER_100G.node_latency_s)
    assert c.node_bytes_per_s == pytest.approx(CLUSTER_100G.node_bytes_per_s)
    assert hosts_needed(CLUSTER_100G, ranks) * 8 >= ranks > (hosts_needed(CLUSTER_100G, ranks) - 1) * 8


def test_units_and_topologies_as_simgrid_spells_them(tmp_path):
    f = tmp_path / "t.xml"
    f.write_text('<platform version="4.1"><cluster id="t" prefix="n" suffix="" radical="0-63" speed="1Gf" '
                 'core="4" bw="100Gbps" lat="500ns" bb_bw="25GBps" bb_lat="1us" loopback_bw="20GBps" '
                 'loopback_lat="0.2us" topology="TORUS" topo_parameters="4,4,4"/></platform>')
    plat = load_platform(str(f))
    assert plat.net_bytes_per_s == pytest.approx(12.5e9) and plat.net_latency_s == pytest.approx(2e-6)
    assert plat.node_bytes_per_s == pytest.approx(20e9) and plat.ranks_per_node == 4
    assert plat.topology == "TORUS 4,4,4"


@pytest.mark.parametrize("text, message", [
    ("<platform/>", "no <cluster>"),
    ("<platform><cluster core='2' bw='10' lat='1us'/></platform>", "bandwidth with a unit"),
    ("<platform><cluster core='x' bw='1Gbps' lat='1us'/></platform>", "core"),
    ("<platform", "not valid XML"),
])
def test_a_bad_file_is_one_clear_error(tmp_path, text, message):
    f = tmp_path / "bad.xml"
    f.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_platform(str(f))


@pytest.mark.parametrize("ranks", [8, 512, 4096])
def test_the_written_backbone_never_limits_and_is_not_shared(ranks):
    """Twice every NIC's bandwidth, as a FATPIPE: SMPI's figures are a shared backbone's (it never
    limits), and its solver does not tie every flow of the run into one system."""
    import xml.etree.ElementTree as ET

    cluster = ET.fromstring(to_simgrid_xml(CLUSTER_100G, ranks)).find(".//cluster")
    assert cluster.get("bb_sharing_policy") == "FATPIPE"
    nodes = hosts_needed(CLUSTER_100G, ranks)
    assert float(cluster.get("bb_bw").removesuffix("Bps")) == pytest.approx(2 * nodes * CLUSTER_100G.net_bytes_per_s)
