"""Cut and heal all traffic between groups of testbed hosts with nftables.

A cut is one nftables table (``inet mpibench_cut``) inside every host's
namespace that drops, on input, every packet from a host on another side. Only
input is filtered: a sender's packets leave and vanish, as they do when a
switch or link between the groups fails, so neither side gets a local error
(an output rule would make the sender's own kernel refuse the packet). Healing
deletes the tables; tearing the namespaces down deletes them too.
"""
from __future__ import annotations

import subprocess
from typing import Sequence

from .netns import Testbed, TestbedError, sh

TABLE = "mpibench_cut"


def rules(blocked: Sequence[str]) -> str:
    """The nft script for one host: drop input from ``blocked`` addresses."""
    addresses = ", ".join(blocked)
    return (f"table inet {TABLE} {{\n"
            f"  chain input {{\n"
            f"    type filter hook input priority -10; policy accept;\n"
            f"    ip saddr {{ {addresses} }} counter drop\n"
            f"  }}\n"
            f"}}\n")


def cut(testbed: Testbed, sides: Sequence[Sequence[int]]) -> None:
    """Drop all traffic between hosts (by index) on different ``sides``."""
    side_of = {h: i for i, side in enumerate(sides) for h in side}
    for host in testbed.hosts:
        if host.index not in side_of:
            continue
        blocked = [other.address for other in testbed.hosts
                   if other.index in side_of and side_of[other.index] != side_of[host.index]]
        if blocked:
            _nft(testbed, host, "-f", "-", stdin=rules(blocked))


def heal(testbed: Testbed) -> None:
    """Remove every cut (hosts without one are left alone)."""
    for host in testbed.hosts:
        if TABLE in _nft(testbed, host, "list", "tables", check=False):
            _nft(testbed, host, "delete", "table", "inet", TABLE)


def dropped_packets(testbed: Testbed) -> dict[str, int]:
    """Packets each host's cut has dropped so far (0 where no cut is in place)."""
    counts = {}
    for host in testbed.hosts:
        text = _nft(testbed, host, "list", "table", "inet", TABLE, check=False)
        counts[host.name] = sum(int(w.split()[0]) for w in text.split("packets ")[1:])
    return counts


def _nft(testbed: Testbed, host, *args: str, stdin: str | None = None, check: bool = True) -> str:
    cmd = ["ip", "netns", "exec", host.name, "nft", *args]
    if stdin is None:
        return sh(*cmd, check=check).stdout
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=20)
    if check and done.returncode != 0:
        raise TestbedError(f"`{' '.join(cmd)}` failed: {done.stderr.strip()}")
    return done.stdout
