"""Hosts as network namespaces on one bridge, created and torn down by name.

A :class:`Testbed` named ``mpb<pid>`` owns, and only ever touches:

* namespaces ``mpb<pid>-h0 .. -h<N-1>`` (one per host; the namespace name is
  also the host's hostname, set in a UTS namespace of its own when a command
  runs there; a second testbed of the same process is ``mpb<pid>b``, and so on),
* a bridge ``mpb<pid>br`` in the root namespace with no address and no other
  port, and veth pairs ``mpb<pid>h<i>`` (bridge side) / ``eth0`` (host side),
* ``/etc/netns/mpb<pid>-h<i>/hosts`` so the hosts resolve each other's names
  (``ip netns exec`` mounts that file over ``/etc/hosts``),
* processes carrying ``MPIBENCH_TESTBED=mpb<pid>`` in their environment.

Addresses are ``198.18.0.<i+1>/24`` (the benchmarking range, RFC 2544): the
only route in a host is the bridge's subnet, so nothing can leave the machine.
:meth:`Testbed.down` removes all of it and is safe to call twice; ``up`` registers
it with :mod:`atexit`, and the context manager calls it on any exception
(Ctrl-C included). :func:`leftovers` lists what is left under a prefix.
"""
from __future__ import annotations

import atexit
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "mpb"
SUBNET = "198.18.0.0/24"
MARKER = "MPIBENCH_TESTBED"
ETC_NETNS = Path("/etc/netns")


_made = itertools.count()


def _next_name() -> str:
    """``mpb<pid>`` for a process's first testbed, then ``mpb<pid>b``, ``mpb<pid>c`` ..."""
    n = next(_made)
    if n >= 25:
        raise ValueError("a process makes at most 25 testbeds")
    return f"{PREFIX}{os.getpid()}" + ("" if n == 0 else "bcdefgijklmnopqrstuvwxyza"[n - 1])


class TestbedError(RuntimeError):
    """A namespace, link or rule could not be set up (names the command and its error)."""


def unavailable() -> str | None:
    """Why no testbed can be built here, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "unshare", "nft"):
        if shutil.which(tool) is None:
            return f"`{tool}` not found (iproute2, util-linux, nftables; `make system-deps` installs them)"
    probe = f"{PREFIX}probe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    return None


def sh(*cmd: str, check: bool = True, timeout_s: float = 20) -> subprocess.CompletedProcess:
    """Run one administrative command; TestbedError naming it when it fails."""
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout_s)
    if check and done.returncode != 0:
        raise TestbedError(f"`{' '.join(cmd)}` failed: {(done.stderr or done.stdout).strip()}")
    return done


@dataclass(frozen=True)
class Host:
    index: int
    name: str  # namespace name and hostname
    address: str
    bridge_port: str  # the veth end on the bridge, in the root namespace


class Testbed:
    """``hosts`` namespaces on one bridge. Use as a context manager, or ``up()``/``down()``."""

    def __init__(self, hosts: int, name: str | None = None):
        if not 1 <= hosts <= 200:
            raise ValueError(f"a testbed has 1 to 200 hosts, not {hosts}")
        self.name = name or _next_name()
        if len(self.name) > 11:  # interface names stop at 15 characters: NAME + "h199"
            raise ValueError(f"testbed name {self.name!r} is longer than 11 characters")
        self.bridge = f"{self.name}br"
        base = SUBNET.split("/")[0].rsplit(".", 1)[0]
        self.hosts = [Host(i, f"{self.name}-h{i}", f"{base}.{i + 1}", f"{self.name}h{i}")
                      for i in range(hosts)]
        self._down = False

    # ---------------------------------------------------------------- build
    def up(self) -> "Testbed":
        atexit.register(self.down)
        try:
            sh("ip", "link", "add", self.bridge, "type", "bridge")
            sh("ip", "link", "set", self.bridge, "up")
            for host in self.hosts:
                self._add_host(host)
            self._write_hosts_files()
        except BaseException:
            self.down()
            raise
        return self

    def _add_host(self, host: Host) -> None:
        sh("ip", "netns", "add", host.name)
        sh("ip", "link", "add", host.bridge_port, "type", "veth", "peer", "name", "eth0",
           "netns", host.name)
        sh("ip", "link", "set", host.bridge_port, "master", self.bridge, "up")
        inside = ("ip", "netns", "exec", host.name)
        sh(*inside, "ip", "link", "set", "lo", "up")
        sh(*inside, "ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
        sh(*inside, "ip", "link", "set", "eth0", "up")

    def _write_hosts_files(self) -> None:
        lines = ["127.0.0.1 localhost"] + [f"{h.address} {h.name}" for h in self.hosts]
        for host in self.hosts:
            folder = ETC_NETNS / host.name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "hosts").write_text("\n".join(lines) + "\n")

    # ---------------------------------------------------------------- use
    def env(self, base: dict | None = None) -> dict:
        """An environment that marks processes as this testbed's (for the leftover check)."""
        return dict(base if base is not None else os.environ, **{MARKER: self.name})

    def exec_prefix(self, host: Host) -> list[str]:
        """Command prefix that runs in ``host``'s namespace under its own hostname."""
        return ["ip", "netns", "exec", host.name, "unshare", "--uts", "sh", "-c",
                'hostname "$0" && exec "$@"', host.name]

    def enter_prefix(self, host: Host) -> list[str]:
        """Like :meth:`exec_prefix` but entering only the network namespace: the machine's
        mounts stay as they are (``ip netns exec`` remounts /sys, hiding the cgroup
        file systems that daemons such as slurmd need)."""
        return ["nsenter", f"--net=/run/netns/{host.name}", "unshare", "--uts", "sh", "-c",
                'hostname "$0" && exec "$@"', host.name]

    def host_by_name(self, name: str) -> Host:
        for host in self.hosts:
            if name in (host.name, host.address):
                return host
        raise KeyError(name)

    def wait_reachable(self, timeout_s: float = 10) -> None:
        """Every host answers from host 0: a TCP connect to a closed port is refused."""
        deadline = time.monotonic() + timeout_s
        for host in self.hosts[1:]:
            while not self.reachable(self.hosts[0], host):
                if time.monotonic() > deadline:
                    raise TestbedError(f"{host.name} ({host.address}) unreachable from "
                                       f"{self.hosts[0].name} after {timeout_s:g} s")
                time.sleep(0.1)

    def reachable(self, src: Host, dst: Host, timeout_s: float = 1.0) -> bool:
        """Whether a TCP SYN from ``src`` to ``dst`` gets an answer (a reset counts)."""
        probe = ("import socket,sys\ns=socket.socket();s.settimeout(float(sys.argv[2]))\n"
                 "sys.exit(0 if s.connect_ex((sys.argv[1],9)) in (0,111) else 1)")
        done = sh(*self.exec_prefix(src), sys.executable, "-c", probe, dst.address, str(timeout_s),
                  check=False)
        return done.returncode == 0

    # ---------------------------------------------------------------- teardown
    def down(self) -> None:
        """Kill this testbed's processes, delete its namespaces, links and files."""
        if self._down:
            return
        self._down = True
        kill_marked(self.name)
        for host in self.hosts:
            for pid in namespace_pids(host.name):
                _kill(pid)
            sh("ip", "netns", "del", host.name, check=False)
            sh("ip", "link", "del", host.bridge_port, check=False)
            shutil.rmtree(ETC_NETNS / host.name, ignore_errors=True)
        sh("ip", "link", "del", self.bridge, check=False)

    def __enter__(self) -> "Testbed":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()


def namespace_pids(namespace: str) -> list[int]:
    done = sh("ip", "netns", "pids", namespace, check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()]


def marked_pids(name: str) -> list[int]:
    """Live processes whose environment carries ``MPIBENCH_TESTBED=name``."""
    marker = f"{MARKER}={name}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_marked(name: str) -> None:
    for pid in marked_pids(name):
        _kill(pid)
    deadline = time.monotonic() + 5
    while marked_pids(name) and time.monotonic() < deadline:
        time.sleep(0.05)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def leftovers(name: str) -> list[str]:
    """Everything still present that a testbed called ``name`` would have created."""
    ours = re.compile(re.escape(name) + r"(br|h\d+|-h\d+)$")
    found = [f"namespace {n}" for n in sh("ip", "netns", "list", check=False).stdout.split()
             if ours.match(n)]
    links = [line.split(":")[1].strip().split("@")[0]
             for line in sh("ip", "-o", "link", "show", check=False).stdout.splitlines()]
    found += [f"link {link}" for link in links if ours.match(link)]
    if ETC_NETNS.exists():
        found += [f"file {p}" for p in ETC_NETNS.glob(f"{name}-*")]
    found += [f"process {pid}" for pid in marked_pids(name)]
    return found


def stale_testbeds() -> list[str]:
    """Names ``mpb<pid>`` of testbeds whose creating process is gone but whose parts remain."""
    pattern = re.compile(rf"^({PREFIX}(\d+)[a-gi-z]?)(?:br|h\d+|-h\d+)$")
    names = sh("ip", "netns", "list", check=False).stdout.split()
    names += [line.split(":")[1].strip().split("@")[0]
              for line in sh("ip", "-o", "link", "show", check=False).stdout.splitlines()]
    if ETC_NETNS.exists():
        names += [p.name for p in ETC_NETNS.iterdir()]
    found = set()
    for name in names:
        match = pattern.match(name)
        if match and not Path(f"/proc/{match.group(2)}").exists():
            found.add(match.group(1))
    return sorted(found)


def remove_stale(name: str) -> None:
    """Remove what a dead testbed called ``name`` left (namespaces, links, files, processes)."""
    kill_marked(name)
    for item in leftovers(name):
        kind, _, what = item.partition(" ")
        if kind == "namespace":
            for pid in namespace_pids(what):
                _kill(pid)
            sh("ip", "netns", "del", what, check=False)
        elif kind == "link":
            sh("ip", "link", "del", what, check=False)
        elif kind == "file":
            shutil.rmtree(what, ignore_errors=True)
