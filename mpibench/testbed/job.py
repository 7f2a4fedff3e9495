"""Run one ``python -m mpibench ...`` job across testbed hosts, with an optional real cut.

The job runs under a hard timeout (``timeout -k 10`` around mpirun, and a kill
of its process group after that); its exit status is kept but never trusted on
its own: the verdict comes from the records (see :mod:`.verdict`).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .launch import Launcher, Placement
from .netfault import CutDriver, NetPartition, Timeline, gate_toml, write_netfaults
from .netns import Testbed

NETWORK_SCENARIO = "network-partition"


@dataclass(frozen=True)
class JobResult:
    returncode: int  # mpirun's (124/137: killed by the timeout)
    stdout: str
    stderr: str
    out: Path
    wall_s: float
    timeline: Timeline | None = None

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


def mpi_env(testbed: Testbed) -> dict:
    env = testbed.env()
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_job(launcher: Launcher, placement: Placement, args: list[str], out: Path,
            timeout_s: float, mpi_options: list[str] = (), partition: NetPartition | None = None,
            cwd: Path | None = None) -> JobResult:
    """``mpirun ... python -m mpibench ARGS --out OUT`` on the first ``placement.hosts`` hosts.

    With ``partition`` the job runs the gate schedule (``ARGS`` must not name a
    scenario) and a :class:`CutDriver` cuts and heals the network while it runs.
    """
    out = Path(out).resolve()
    cwd = Path(cwd or launcher.workdir)
    args = list(args)
    if partition is not None:
        name = f"{NETWORK_SCENARIO}.toml"
        (cwd / name).write_text(gate_toml(partition, placement.ranks_per_host, NETWORK_SCENARIO))
        args += ["--scenario", name]
    program = [sys.executable, "-m", "mpibench", *args, "--out", str(out)]
    command = launcher.command(placement, program, timeout_s, list(mpi_options))
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=cwd, env=mpi_env(launcher.testbed), text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    driver = None
    if partition is not None:
        driver = CutDriver(launcher.testbed, partition, out, started)
        driver.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s + 20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        stderr += f"\ntestbed: the job passed its {timeout_s:g} s limit and was killed\n"
    finally:
        if driver is not None:
            driver.stop()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    result = JobResult(proc.returncode, stdout, stderr, out, time.monotonic() - started,
                       driver.timeline if driver else None)
    if partition is not None and out.is_dir():
        from mpibench.sync.registry import BASELINE

        strategy = _option(args, "--strategy", BASELINE)  # run's default
        write_netfaults(out, NETWORK_SCENARIO + ".toml", strategy, partition,
                        placement.ranks_per_host, driver.timeline)
    return result


def _option(args: list[str], name: str, default: str) -> str:
    return args[args.index(name) + 1] if name in args[:-1] else default
