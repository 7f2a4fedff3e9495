"""Open MPI across a testbed: rsh agent, hostfile and the mpirun command line.

``mpirun`` runs in host 0's namespace (under that host's name). To start its
daemon on another host, Open MPI's launcher (PRRTE, ``plm_ssh_agent``) runs the
agent written here as it would run ``ssh HOST COMMAND``; the agent maps the
host name to its namespace and runs the command there through ``ip netns exec``
under the host's own hostname. All hosts share the machine's file system, so
the daemon and the ranks find the same Python, venv and output folder.

The MPI transports are pinned to the bridge's subnet: TCP between hosts
(``btl_tcp_if_include``, ``oob_tcp_if_include``), shared memory between ranks of
one host (Open MPI picks it for ranks its runtime places on the same node).
"""
from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .netns import SUBNET, Testbed

AGENT = """#!/bin/sh
# rsh agent for testbed {name}: PRRTE calls it as `ssh [options] HOST COMMAND...`.
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host="$1"; shift
echo "$(date +%T.%N) agent: $host: $*" >> "{log}"
case "$host" in
{cases}
  *) echo "testbed {name}: unknown host '$host'" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec /bin/sh -c "$1"' "$ns" "$*"
"""


@dataclass(frozen=True)
class Placement:
    """How many ranks each host runs (``slots``) and the hosts the job uses."""

    hosts: int
    ranks_per_host: int

    @property
    def ranks(self) -> int:
        return self.hosts * self.ranks_per_host


class Launcher:
    """Files and command lines to run MPI jobs on ``testbed`` (written under ``workdir``)."""

    def __init__(self, testbed: Testbed, workdir: Path, mpirun: str | None = None):
        self.testbed = testbed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.mpirun = mpirun or str(Path(sys.executable).parent / "mpirun")
        if not Path(self.mpirun).exists():
            self.mpirun = shutil.which("mpirun") or "mpirun"
        self.agent = self.workdir / "rsh-agent.sh"
        self.agent_log = self.workdir / "rsh-agent.log"
        self._write_agent()

    def _write_agent(self) -> None:
        cases = "\n".join(f"  {h.name}|{h.address}) ns={h.name} ;;" for h in self.testbed.hosts)
        self.agent.write_text(AGENT.format(name=self.testbed.name, log=self.agent_log, cases=cases))
        self.agent.chmod(0o755)

    def hostfile(self, placement: Placement) -> Path:
        if placement.hosts > len(self.testbed.hosts):
            raise ValueError(f"{placement.hosts} hosts asked, the testbed has {len(self.testbed.hosts)}")
        path = self.workdir / f"hostfile-{placement.hosts}x{placement.ranks_per_host}"
        path.write_text("".join(f"{h.name} slots={placement.ranks_per_host}\n"
                                for h in self.testbed.hosts[:placement.hosts]))
        return path

    def mpirun_args(self, placement: Placement, extra: list[str] = ()) -> list[str]:
        """``mpirun`` and its options for ``placement``: ranks filled host by host."""
        return [self.mpirun, "--hostfile", str(self.hostfile(placement)),
                "--map-by", f"ppr:{placement.ranks_per_host}:node", "--bind-to", "none",
                "--prtemca", "plm_ssh_agent", str(self.agent),
                "--prtemca", "plm_ssh_no_tree_spawn", "1",
                "--prtemca", "oob_tcp_if_include", SUBNET,
                "--mca", "btl_tcp_if_include", SUBNET,
                "--mca", "btl", "self,sm,tcp",
                "--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1",
                *extra]

    def command(self, placement: Placement, program: list[str], timeout_s: float,
                extra: list[str] = ()) -> list[str]:
        """The full command: mpirun on host 0 under a hard timeout, killed 10 s after it."""
        head = self.testbed.hosts[0]
        return (self.testbed.exec_prefix(head) +
                ["timeout", "-k", "10", str(int(timeout_s)), *self.mpirun_args(placement, extra),
                 "-n", str(placement.ranks), *program])

    def replay_text(self, placement: Placement, program: list[str]) -> str:
        return shlex.join(self.mpirun_args(placement) + ["-n", str(placement.ranks), *program])
