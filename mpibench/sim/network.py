"""The simulated network: what a message and each collective cost in virtual time.

A point-to-point message of n bytes between ranks on the same node costs
``alpha + n * beta`` with the node's (shared-memory) figures, between nodes the
network's (NIC and link); a reduction adds ``gamma`` seconds per byte reduced.
Collectives the code calls on the MPI library itself (``Allreduce``,
``Bcast``, ``Allgather``, ``Barrier``, ``Agree``, ``Shrink``) cost what the
usual algorithms cost under the same figures (recursive doubling for small
all-reduces, a ring for large ones, binomial trees for broadcasts and
barriers), so a strategy written by hand and the library's own collective are
timed by one model. The figures come from a platform description
(:mod:`mpibench.sim.platform`) or from the run's own calibration.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Network:
    alpha_s: float = 20e-6  # per message within a node
    beta_s_per_byte: float = 1.0 / 5e9
    gamma_s_per_byte: float = 1.0 / 4e9  # local reduction
    net_alpha_s: float = 20e-6  # per message between nodes
    net_beta_s_per_byte: float = 1.0 / 5e9
    ranks_per_node: int = 0  # 0: every rank on one node
    notice_s: float = 1e-3  # from a death to the survivors' failure notice

    def same_node(self, a: int, b: int) -> bool:
        n = self.ranks_per_node
        return n <= 0 or a // n == b // n

    def message_s(self, nbytes: int, a: int = 0, b: int = 0) -> float:
        if self.same_node(a, b):
            return self.alpha_s + nbytes * self.beta_s_per_byte
        return self.net_alpha_s + nbytes * self.net_beta_s_per_byte

    def _worst(self, p: int) -> tuple[float, float]:
        """(alpha, beta) of the slowest hop a collective over ``p`` ranks takes."""
        if self.ranks_per_node <= 0 or p <= self.ranks_per_node:
            return self.alpha_s, self.beta_s_per_byte
        return self.net_alpha_s, self.net_beta_s_per_byte

    def collective_s(self, kind: str, nbytes: int, p: int) -> float:
        """Virtual seconds from the last member's arrival to completion."""
        if p <= 1:
            return 0.0
        a, b = self._worst(p)
        rounds = math.ceil(math.log2(p))
        if kind == "allreduce":
            small = 2 * rounds * a + rounds * nbytes * (b + self.gamma_s_per_byte)
            large = 2 * (p - 1) * a + 2 * (p - 1) / p * nbytes * b + (p - 1) / p * nbytes * self.gamma_s_per_byte
            return min(small, large)
        if kind == "bcast":
            return rounds * (a + nbytes * b)
        if kind in ("allgather", "gather"):
            return rounds * a + (p - 1) / p * nbytes * b
        return 2 * rounds * a  # barrier, agree, shrink, split, dup: a few small messages


def from_calibration(cal: dict) -> Network:
    """A one-node network from a calibration section (run.json's ``calibration`` or a
    calibration JSON): the fitted alpha, beta and gamma of this host."""
    def pick(*names, default):
        for name in names:
            value = cal.get(name)
            if isinstance(value, (int, float)) and value > 0:
                return float(value)
        return default

    base = Network()
    alpha = pick("alpha_s", "alpha", default=base.alpha_s)
    beta = pick("beta_s_per_byte", "beta", default=base.beta_s_per_byte)
    gamma = pick("gamma_s_per_byte", "gamma", default=base.gamma_s_per_byte)
    return Network(alpha_s=alpha, beta_s_per_byte=beta, gamma_s_per_byte=gamma,
                   net_alpha_s=alpha, net_beta_s_per_byte=beta)
