"""A throw-away multi-node Slurm: one slurmd per testbed host (network namespace).

Each node is a host of a :class:`mpibench.testbed.netns.Testbed`: slurmd runs in
the host's namespace under the host's own hostname (so it finds its node name
by itself) and listens on the host's bridge address; slurmctld and every
client command run in host 0. munged stays in the root namespace: its socket is
a file, and every namespace shares the file system. Spool folder, PID and log
files carry the node name (``%n``), so the slurmds do not collide.

Everything else (keys, sbatch, stop) is :class:`slurm_cluster.SlurmCluster`'s;
``stop()`` also tears the testbed down.
"""
from __future__ import annotations

import re

from mpibench.testbed.netns import Testbed
from slurm_cluster import SLURM_CONF, SlurmCluster, _free_port, _user_name


def multinode_conf(testbed: Testbed, cpus: int, **fields) -> str:
    """The single-node configuration with the testbed's hosts as nodes."""
    head = testbed.hosts[0]
    text = SLURM_CONF.format(host=head.name, cpus=cpus, **fields)
    text = text.replace(f"SlurmctldHost={head.name}(127.0.0.1)",
                        f"SlurmctldHost={head.name}({head.address})")
    text = re.sub(r"^SlurmdPidFile=.*$", f"SlurmdPidFile={fields['root']}/run/slurmd-%n.pid",
                  text, flags=re.M)
    text = re.sub(r"^SlurmdLogFile=.*$", f"SlurmdLogFile={fields['root']}/log/slurmd-%n.log",
                  text, flags=re.M)
    text = re.sub(r"^SlurmdSpoolDir=.*$", f"SlurmdSpoolDir={fields['root']}/spool/%n", text,
                  flags=re.M)
    # Every node shares /tmp: the PMIx plugin's per-step folders would collide there.
    text += f"TmpFS={fields['root']}/tmp/%n\n"
    text = re.sub(r"^NodeName=.*\n", "", text, flags=re.M)
    text = re.sub(r"^PartitionName=.*\n", "", text, flags=re.M)
    nodes = "".join(f"NodeName={h.name} NodeAddr={h.address} CPUs={cpus} State=UNKNOWN\n"
                    for h in testbed.hosts)
    names = ",".join(h.name for h in testbed.hosts)
    return text + nodes + (f"PartitionName=multi Nodes={names} Default=YES MaxTime=INFINITE "
                           "State=UP OverSubscribe=NO\n")


class MultiNodeSlurmCluster(SlurmCluster):
    """``nodes`` slurmd instances, one per testbed host, in one partition ``multi``."""

    def __init__(self, root, nodes: int = 2, cpus: int = 4):
        super().__init__(root, cpus)
        self.testbed = Testbed(nodes)
        self.host = self.testbed.hosts[0].name
        self.client_prefix = self.testbed.exec_prefix(self.testbed.hosts[0])
        self.env = self.testbed.env(self.env)

    def start(self, timeout_s: float = 60, attempts: int = 2) -> "MultiNodeSlurmCluster":
        self.testbed.up()
        try:
            self.testbed.wait_reachable()
            return super().start(timeout_s, attempts)
        except BaseException:
            self.testbed.down()
            raise

    def _start_slurm(self, timeout_s: float) -> None:
        for host in self.testbed.hosts:
            for sub in ("spool", "tmp"):
                (self.root / sub / host.name).mkdir(parents=True, exist_ok=True)
        self.conf.write_text(multinode_conf(
            self.testbed, self.cpus, ctld_port=_free_port(), slurmd_port=_free_port(),
            user=_user_name(), munge_socket=self.munge_socket, root=self.root))
        head = self.testbed.exec_prefix(self.testbed.hosts[0])
        self._spawn("slurmctld", head + ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        for host in self.testbed.hosts:
            self._spawn(f"slurmd-{host.name}",
                        self.testbed.enter_prefix(host) + ["slurmd", "-D", "-f", str(self.conf)])
        self._wait_idle(timeout_s)

    def _stop_slurm(self) -> None:
        for name in [n for n in self.procs if n.startswith("slurm")]:
            proc = self.procs.pop(name)
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def _wait_idle(self, timeout_s: float) -> None:
        def idle() -> bool:
            out = self.run(["sinfo", "--noheader", "-o", "%t %D"], check=False)
            return out.stdout.split() == ["idle", str(len(self.testbed.hosts))]

        self._wait(idle, timeout_s, f"{len(self.testbed.hosts)} nodes to become idle")

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self.testbed.down()
