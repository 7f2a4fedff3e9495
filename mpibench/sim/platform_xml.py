"""Platforms as SimGrid XML: one ``<cluster>`` read into :class:`ClusterFigures`, and written out.

SimGrid (and so SMPI) describes a cluster as hosts of ``core`` cores, each
host on its own link (``bw``, ``lat``) to a backbone (``bb_bw``, ``bb_lat``),
and a ``loopback`` link for messages between two ranks of one host. A
message between hosts crosses the sender's link, the backbone and the
receiver's link, so its latency is ``2 lat + bb_lat``; that is what
:class:`.platform.Platform` calls the network latency. The loopback link is
not shared between flows (SimGrid makes it a fat pipe), as the round model
assumes for ranks of one node.

``topology`` (``FAT_TREE``, ``TORUS``, ``DRAGONFLY``) is kept by name with
its ``topo_parameters``: the round model charges the NICs, one hop's latency
each way, and nothing beyond them, so on those topologies its figures are
those of a full-bisection network (a flat cluster is one) and
:func:`mpibench.sim.rounds.notes` says so; SMPI running the same file does
model the links in between (``lab/studies/smpi_crosscheck.py``).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from dataclasses import dataclass

from mpibench.base.config import UsageError


@dataclass(frozen=True)
class ClusterFigures:
    """What the round model needs of a cluster (:class:`.platform.Platform` is built from it)."""

    name: str
    ranks_per_node: int
    node_latency_s: float
    node_bytes_per_s: float
    net_latency_s: float
    net_bytes_per_s: float
    topology: str

_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "ki": 2.0 ** 10, "mi": 2.0 ** 20,
           "gi": 2.0 ** 30, "ti": 2.0 ** 40}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12}
_QUANTITY = re.compile(r"^\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*$")


def _factor(unit: str, kind: str) -> float | None:
    """Seconds per unit of time, or bytes per second per unit of bandwidth (SimGrid's spelling:
    ``Gbps`` bits, ``GBps`` bytes)."""
    if kind == "time":
        return _TIME.get(unit.lower())
    for suffix, scale in (("bps", 1 / 8), ("Bps", 1.0)):
        if unit.endswith(suffix) and unit[:-3].lower() in _PREFIX:
            return _PREFIX[unit[:-3].lower()] * scale
    return None


def _quantity(text: str | None, kind: str, what: str, where: str) -> float:
    match = _QUANTITY.match(text or "")
    factor = _factor(match.group(2), kind) if match else None
    if factor is None:
        raise UsageError(f"platform {where}: {what} {text!r} is not a {kind} with a unit "
                         f"({'s, ms, us, ns' if kind == 'time' else 'Gbps, GBps, ...'})")
    try:
        value = float(match.group(1)) * factor
    except ValueError:
        raise UsageError(f"platform {where}: {what} {text!r} is not a number") from None
    if value < 0:
        raise UsageError(f"platform {where}: {what} {text!r} is negative")
    return value


def from_simgrid_xml(text: str, where: str) -> ClusterFigures:
    """The first ``<cluster>`` of a SimGrid platform file."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise UsageError(f"platform {where} is not valid XML: {exc}") from None
    cluster = root.find(".//cluster")
    if cluster is None:
        raise UsageError(f"platform {where}: no <cluster> element (only SimGrid clusters are read)")
    a = cluster.attrib
    cores = int(a.get("core", "1")) if a.get("core", "1").isdigit() else 0
    if cores < 1:
        raise UsageError(f"platform {where}: cluster 'core' must be a positive integer, got {a.get('core')!r}")
    link_lat = _quantity(a.get("lat"), "time", "lat", where)
    net_lat = 2 * link_lat + _quantity(a.get("bb_lat", "0s"), "time", "bb_lat", where)
    net_bw = _quantity(a.get("bw"), "bandwidth", "bw", where)
    if "bb_bw" in a:  # a backbone slower than one host link caps every inter-node message
        net_bw = min(net_bw, _quantity(a["bb_bw"], "bandwidth", "bb_bw", where))
    node_bw = _quantity(a.get("loopback_bw", a.get("bw")), "bandwidth", "loopback_bw", where)
    node_lat = _quantity(a.get("loopback_lat", a.get("lat")), "time", "loopback_lat", where)
    if min(net_bw, node_bw) <= 0:
        raise UsageError(f"platform {where}: bandwidths must be positive")
    shape = a.get("topology", "FLAT").upper()  # FLAT: every host on the backbone, full bisection
    topology = "fat-tree" if shape == "FLAT" else f"{shape} {a.get('topo_parameters', '')}".strip()
    return ClusterFigures(f"{a.get('id', 'cluster')} ({where.rsplit('/', 1)[-1]})", cores, node_lat, node_bw,
                          net_lat, net_bw, topology)


def hosts_needed(plat, ranks: int) -> int:
    per = max(plat.ranks_per_node, 1)
    return max(1, -(-ranks // per))


def to_simgrid_xml(plat, ranks: int) -> str:
    """A SimGrid cluster of the platform (a :class:`.platform.Platform`), with enough hosts for ``ranks``: each host one NIC (its
    link, half the network latency each way), a backbone that never limits (full bisection, as
    the round model assumes), and the node's figures on the loopback link. The backbone is a
    FATPIPE (each flow gets its whole bandwidth): since it never limits, SMPI's figures are the
    same as with a shared one, but its solver no longer ties every flow of the run into one
    system, which makes thousands of ranks several times faster to simulate."""
    nodes = hosts_needed(plat, ranks)
    backbone_bytes_per_s = 2 * nodes * plat.net_bytes_per_s
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f'  <cluster id="cluster" prefix="node-" suffix="" radical="0-{nodes - 1}" speed="1Gf"'
            f' core="{max(plat.ranks_per_node, 1)}" bw="{plat.net_bytes_per_s:.6g}Bps"'
            f' lat="{plat.net_latency_s / 2 * 1e9:.6g}ns" bb_bw="{backbone_bytes_per_s:.6g}Bps" bb_lat="0s"'
            ' bb_sharing_policy="FATPIPE"'
            f' loopback_bw="{plat.node_bytes_per_s:.6g}Bps" loopback_lat="{plat.node_latency_s * 1e9:.6g}ns"/>\n'
            '</platform>\n')

