"""A simulated cluster described as data: ranks per node, node and network links, compute.

Given as a TOML file::

    ranks_per_node = 8
    placement = "block"       # rank r on node r // ranks_per_node; "cyclic": r % nodes
    [node]      # between ranks of one node (shared memory)
    latency_us = 0.5
    bandwidth_gbps = 400
    [network]   # between nodes (NIC and links: the slower of the two)
    latency_us = 2.0
    bandwidth_gbps = 100
    topology = "fat-tree"     # full bisection: links are not shared beyond the NIC
                              # ("torus", "dragonfly": named, predicted as full bisection)
    [compute]
    gamma_gbps = 32           # local reduction throughput
    [software]  # optional: what the MPI library charges per message (all default to none)
    overhead_us = 0.3         # LogGP's o: CPU time each message costs its sender and its receiver
    eager_limit_bytes = 65536 # larger messages go rendezvous: a handshake (one more round trip) first
    smpi_factors = "default"  # SimGrid SMPI's size-dependent latency and bandwidth factors, as
                              # SimGrid 3.32 ships them; or give the strings themselves:
    # smpi_lat_factor = "65472:11.6436;...;0:2.01467"  (SimGrid's --cfg=smpi/lat-factor format)
    # smpi_bw_factor = "65472:0.940694;...;0:0.812084"

or as a SimGrid platform file (``.xml``, one ``<cluster>``: :mod:`.platform_xml`), or taken
from a run's own calibration (``run.json`` or a calibration JSON), which
describes this host as a one-node cluster. Bandwidths are in gigabits per second
(1e9 bit/s), as network hardware is sold.
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpibench.base.config import UsageError

from .network import Network, from_calibration

# SimGrid 3.32's default smpi/lat-factor and smpi/bw-factor (fitted by the SimGrid team to MPI
# ping-pongs on a real cluster): "size:factor" pairs, the factor of the largest size <= the message.
SMPI_DEFAULT_LAT_FACTOR = "65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;1426:1.61075;732:1.9503;257:1.95341;0:2.01467"
SMPI_DEFAULT_BW_FACTOR = "65472:0.940694;15424:0.697866;9376:0.58729;5776:1.08739;3484:0.77493;1426:0.608902;732:0.341987;257:0.338112;0:0.812084"
NO_FACTORS: tuple[tuple[float, float], ...] = ((0.0, 1.0),)

TOPOLOGIES = ("fat-tree", "single-switch", "torus", "dragonfly")
FULL_BISECTION = ("fat-tree", "single-switch")  # what the round model's NIC-only charging is exact for
# (a TOML "fat-tree" is a non-blocking one; SimGrid XML topologies keep their own names)
PLACEMENTS = ("block", "cyclic")


@dataclass(frozen=True)
class Platform:
    name: str
    ranks_per_node: int
    node_latency_s: float
    node_bytes_per_s: float
    net_latency_s: float
    net_bytes_per_s: float
    gamma_bytes_per_s: float
    topology: str = "fat-tree"
    calibrated: Network | None = None  # taken as is from a calibration
    placement: str = "block"
    # what the MPI library charges per message, beside the links (see the module's [software])
    overhead_s: float = 0.0  # per message, on the sender and again on the receiver
    eager_limit_bytes: float = float("inf")  # above it: rendezvous, one more round trip first
    lat_factor: tuple[tuple[float, float], ...] = NO_FACTORS  # (from bytes, factor), ascending
    bw_factor: tuple[tuple[float, float], ...] = NO_FACTORS
    reduction_compute: bool = True  # False: predict the messages alone (SMPI's simulate-computation:no)

    def latency_factor(self, nbytes: float) -> float:
        return _factor(self.lat_factor, nbytes)

    def bandwidth_factor(self, nbytes: float) -> float:
        return _factor(self.bw_factor, nbytes)

    def node_of(self, ranks: np.ndarray, p: int) -> np.ndarray:
        """The node each rank sits on, among the ``ceil(p / ranks_per_node)`` nodes of p ranks."""
        per = max(self.ranks_per_node, 1)
        if self.placement == "cyclic":
            return ranks % max(1, -(-p // per))
        return ranks // per

    def network(self) -> Network:
        if self.calibrated is not None:
            return self.calibrated
        return Network(alpha_s=self.node_latency_s, beta_s_per_byte=1.0 / self.node_bytes_per_s,
                       gamma_s_per_byte=1.0 / self.gamma_bytes_per_s, net_alpha_s=self.net_latency_s,
                       net_beta_s_per_byte=1.0 / self.net_bytes_per_s, ranks_per_node=self.ranks_per_node)


def _factor(table: tuple[tuple[float, float], ...], nbytes: float) -> float:
    found = table[0][1]
    for start, factor in table:
        if nbytes >= start:
            found = factor
    return found


def parse_factors(text: str, where: str) -> tuple[tuple[float, float], ...]:
    """SimGrid's ``size:factor;size:factor`` string as ascending (from bytes, factor) pairs."""
    pairs = []
    for part in (x for x in text.split(";") if x.strip()):
        size, sep, factor = part.partition(":")
        try:
            pair = (float(size), float(factor))
        except ValueError:
            pair = None
        if not sep or pair is None or pair[0] < 0 or not pair[1] > 0:
            raise UsageError(f"platform {where}: factor {part!r} is not 'bytes:factor' with bytes >= 0, factor > 0")
        pairs.append(pair)
    if not pairs:
        raise UsageError(f"platform {where}: an empty factor string")
    pairs.sort()
    if pairs[0][0] > 0:
        raise UsageError(f"platform {where}: factors must start at 0 bytes, got {text!r}")
    return tuple(pairs)


def _software(data: dict, name: str) -> dict:
    soft = data.get("software", {})
    if not isinstance(soft, dict):
        raise UsageError(f"platform {name}: [software] must be a table")
    unknown = set(soft) - {"overhead_us", "eager_limit_bytes", "smpi_factors", "smpi_lat_factor", "smpi_bw_factor"}
    if unknown:
        raise UsageError(f"platform {name}: [software] has no {', '.join(sorted(unknown))}")
    found: dict = {}
    if "overhead_us" in soft:
        value = soft["overhead_us"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise UsageError(f"platform {name}: 'overhead_us' must be a number >= 0, got {value!r}")
        found["overhead_s"] = float(value) * 1e-6
    if "eager_limit_bytes" in soft:
        found["eager_limit_bytes"] = _number(soft, "eager_limit_bytes", name)
    preset = soft.get("smpi_factors")
    if preset not in (None, "default", "none"):
        raise UsageError(f"platform {name}: smpi_factors is 'default' or 'none', got {preset!r}")
    lat = soft.get("smpi_lat_factor", SMPI_DEFAULT_LAT_FACTOR if preset == "default" else None)
    bw = soft.get("smpi_bw_factor", SMPI_DEFAULT_BW_FACTOR if preset == "default" else None)
    for key, text in (("lat_factor", lat), ("bw_factor", bw)):
        if text is not None:
            if not isinstance(text, str):
                raise UsageError(f"platform {name}: smpi_{key} must be a string")
            found[key] = parse_factors(text, name)
    return found


CLUSTER_100G = Platform("100 Gb/s cluster (8 ranks per node, fat tree)", 8, 0.5e-6, 400e9 / 8, 2.0e-6,
                        100e9 / 8, 32e9 / 8)


def _number(table: dict, key: str, where: str) -> float:
    value = table.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise UsageError(f"platform {where}: '{key}' must be a positive number, got {value!r}")
    return float(value)


def from_toml(data: dict, name: str) -> Platform:
    node, net, comp = data.get("node", {}), data.get("network", {}), data.get("compute", {})
    topology = net.get("topology", "fat-tree")
    if topology not in TOPOLOGIES:
        raise UsageError(f"platform {name}: topology must be one of {', '.join(TOPOLOGIES)}, got {topology!r}")
    placement = data.get("placement", "block")
    if placement not in PLACEMENTS:
        raise UsageError(f"platform {name}: placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
    per_node = data.get("ranks_per_node")
    if not isinstance(per_node, int) or per_node < 1:
        raise UsageError(f"platform {name}: 'ranks_per_node' must be a positive integer, got {per_node!r}")
    return Platform(name, per_node, _number(node, "latency_us", name) * 1e-6,
                    _number(node, "bandwidth_gbps", name) * 1e9 / 8, _number(net, "latency_us", name) * 1e-6,
                    _number(net, "bandwidth_gbps", name) * 1e9 / 8, _number(comp, "gamma_gbps", name) * 1e9 / 8,
                    topology, placement=placement, **_software(data, name))


def load_platform(path: str) -> Platform:
    """A platform from a TOML file, or this host's from run.json / a calibration JSON; bad input
    is a UsageError naming the file."""
    p = Path(path)
    if p.is_dir():
        p = p / "run.json"
    try:
        text = p.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read platform {path}: {exc.strerror}") from None
    try:
        if p.suffix == ".toml":
            return from_toml(tomllib.loads(text), str(p))
        if p.suffix == ".xml":
            from .platform_xml import from_simgrid_xml

            c = from_simgrid_xml(text, str(p))
            return Platform(c.name, c.ranks_per_node, c.node_latency_s, c.node_bytes_per_s, c.net_latency_s,
                            c.net_bytes_per_s, CLUSTER_100G.gamma_bytes_per_s, c.topology)
        data = json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"platform {path} is not valid {'TOML' if p.suffix == '.toml' else 'JSON'}: {exc}") from None
    cal = data.get("calibration", data) if isinstance(data, dict) else None
    if not isinstance(cal, dict) or "alpha_s" not in cal:
        raise UsageError(f"platform {path}: no calibration (alpha_s, beta_s_per_byte) found")
    cal = {**cal, "gamma_s_per_byte": cal.get("gamma_cache_s_per_byte")}
    net = from_calibration(cal)
    return Platform(f"this host, calibrated ({p.name})", 0, net.alpha_s, 1 / net.beta_s_per_byte, net.alpha_s,
                    1 / net.beta_s_per_byte, 1 / net.gamma_s_per_byte, "single-switch", calibrated=net)
