"""A throw-away single-node Slurm cluster for testing the job scripts in ``jobs/``.

``SlurmCluster`` starts munged, slurmctld and slurmd as child processes of the
test run, with every key, socket, spool folder, log and PID file under one
temporary folder, and one node that advertises ``cpus`` CPUs whatever the
machine has (so 8-task jobs fit on a 2-core runner). Nothing under /etc or
/run is touched; clients find the cluster through ``SLURM_CONF`` in ``env``.
``stop()`` cancels what is left and ends the three daemons by their PIDs.

``missing()`` names what this machine lacks (binaries, root), so tests can
skip with the reason, or fail under CI.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "scontrol", "scancel", "squeue")
# Debian installs the daemons under /usr/sbin, which a non-login PATH may lack.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])

# The keys that matter on a small shared machine (measured, see issue 7):
# config_overrides lets the node advertise more CPUs than it has cores;
# linuxproc/task/none need no cgroups; MpiDefault=pmix so that a plain
# `srun` inside a job starts one N-rank job, not N singletons;
# EnforcePartLimits rejects an oversized request instead of pending forever;
# batch_sched_delay=0 and MinJobAge keep `sbatch --wait` at about 2 s.
SLURM_CONF = """\
ClusterName=mpibench-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser={user}
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
PlugStackConfig={root}/plugstack.conf
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
EnforcePartLimits=ALL
SchedulerParameters=batch_sched_delay=0
MinJobAge=4
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MaxArraySize=1001
InactiveLimit=0
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
"""


def missing() -> str | None:
    """Why no test cluster can start here, or None when it can."""
    absent = [name for name in DAEMONS + CLIENTS if shutil.which(name, path=SEARCH_PATH) is None]
    if absent:
        return ("Slurm/munge not installed (missing " + ", ".join(absent) +
                "); run `make system-deps` as root")
    if os.geteuid() != 0:
        return "the throw-away Slurm cluster needs root (slurmd runs jobs as their user)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# slurmd can fail to start a job step's tasks at all (seen once in a full test run on a loaded
# 2-core machine: "StepId=9.0 aborted before step completely launched", then "task N launch
# failed" for every task). Nothing of the job ran, so it says nothing about the job: a
# submission whose log shows that, and no line from the job's own tasks, is made once more.
STEP_ABORTED = "aborted before step completely launched"
_TASK_LAUNCH_FAILED = re.compile(r"^srun: error: task \d+ launch failed")


def step_never_launched(log: str) -> bool:
    """The log shows srun's step-launch failure and every srun line is srun's own: no task ran."""
    if STEP_ABORTED not in log:
        return False
    lines = log.splitlines()
    start = next(i for i, line in enumerate(lines) if STEP_ABORTED in line)
    after = lines[start + 1:]
    failed = [line for line in after if _TASK_LAUNCH_FAILED.match(line)]
    tasks_said = [line for line in after if not line.startswith("srun:") and not line.startswith("verdict:")]
    return bool(failed) and not tasks_said


@dataclass
class Submitted:
    """One `sbatch --wait` submission: its job id, exit status and the job's output."""
    job_id: int | None
    returncode: int
    sbatch_output: str
    log: str

    @property
    def text(self) -> str:
        return f"sbatch said:\n{self.sbatch_output}\njob output:\n{self.log}"


class SlurmCluster:
    def __init__(self, root: Path, cpus: int = 8):
        self.root = Path(root)
        self.cpus = cpus
        self.host = socket.gethostname().split(".")[0]
        self.procs: dict[str, subprocess.Popen] = {}
        self.client_prefix: list[str] = []  # where client commands run (a namespace, for several nodes)
        self.conf = self.root / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf), PATH=SEARCH_PATH)
        # A job inherits the submitter's environment: keep pytest's own Slurm
        # context (if the tests themselves run inside a Slurm job) out of it.
        for name in list(self.env):
            if name.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and name != "SLURM_CONF":
                del self.env[name]

    # ------------------------------------------------------------------ start
    def start(self, timeout_s: float = 30, attempts: int = 3) -> "SlurmCluster":
        for sub in ("munge", "state", "spool", "run", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._start_munge()
        (self.root / "plugstack.conf").write_text("")
        # The ports are free when picked but another process may take one before
        # the daemons bind it: then they exit, and a second pick is tried.
        for attempt in range(attempts):
            try:
                self._start_slurm(timeout_s)
                return self
            except RuntimeError:
                self._stop_slurm()
                if attempt == attempts - 1:
                    self.stop()
                    raise
        return self

    def _start_slurm(self, timeout_s: float) -> None:
        self.conf.write_text(SLURM_CONF.format(
            host=self.host, ctld_port=_free_port(), slurmd_port=_free_port(),
            user=_user_name(), munge_socket=self.munge_socket, root=self.root, cpus=self.cpus))
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._spawn("slurmd", ["slurmd", "-D", "-N", self.host, "-f", str(self.conf)])
        self._wait_idle(timeout_s)

    def _stop_slurm(self) -> None:
        for name in ("slurmd", "slurmctld"):
            proc = self.procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge" / "munge.socket"

    def _start_munge(self) -> None:
        munge = self.root / "munge"
        # munged refuses a socket folder that others can list or write to.
        munge.chmod(0o711)
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self._spawn("munged", ["munged", "-F", "-f", f"--socket={self.munge_socket}",
                               f"--key-file={key}", f"--pid-file={munge / 'munged.pid'}",
                               f"--log-file={self.root / 'log' / 'munged.log'}",
                               f"--seed-file={munge / 'munged.seed'}"])
        self._wait(lambda: self.munge_socket.exists(), 10, "munged socket")

    def _spawn(self, name: str, cmd: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.stdout", "w")
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.env,
                                            start_new_session=True)
        log.close()

    def _wait_idle(self, timeout_s: float) -> None:
        def idle() -> bool:
            out = self.run(["scontrol", "show", "node", self.host], check=False)
            return "State=IDLE" in out.stdout

        self._wait(idle, timeout_s, f"node {self.host} to become idle")

    def _wait(self, ready, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}\n{self.logs()}")
            if ready():
                return
            time.sleep(0.05)
        raise RuntimeError(f"timed out after {timeout_s} s waiting for {what}\n{self.logs()}")

    # ------------------------------------------------------------------ use
    def run(self, cmd: list[str], check: bool = True, timeout_s: float = 30,
            env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.client_prefix + cmd, capture_output=True, text=True, timeout=timeout_s,
                              env=env or self.env, check=check)

    def sbatch(self, script: Path, *args: str, workdir: Path, env: dict | None = None,
               options: list[str] = (), wait: bool = True, timeout_s: float = 120) -> Submitted:
        """``sbatch [--wait] [options] script args`` from ``workdir``.

        With ``wait`` the call returns when the job has ended, with the job's
        exit status and its log (``workdir/slurm-<id>.out``); without, at once
        with the job id (array tasks log to ``slurm-<array id>_<task>.out``).
        """
        array = any(o.startswith("--array") for o in options)
        log_pattern = "slurm-%A_%a.out" if array else "slurm-%j.out"
        cmd = ["sbatch", "--parsable", f"--output={workdir}/{log_pattern}"]
        cmd += (["--wait"] if wait else []) + [*options, str(script), *args]
        proc = subprocess.Popen(self.client_prefix + cmd, cwd=workdir, env=dict(self.env, **(env or {})), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        timed_out = False
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            self.run(["scancel", "--full", f"--user={_user_name()}"], check=False)
            timed_out = True
        match = re.search(r"^(\d+)", out, re.MULTILINE)
        job_id = int(match.group(1)) if match else None
        log = workdir / f"slurm-{job_id}.out"
        text = log.read_text(errors="replace") if wait and log.exists() else ""
        if timed_out:
            raise AssertionError(f"sbatch --wait timed out after {timeout_s} s; job log:\n"
                                 f"{text[-4000:]}\n{self.logs(1500)}")
        return Submitted(job_id, proc.returncode, out, text)

    def logs(self, tail_chars: int = 3000) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-tail_chars:]}")
        return "\n".join(parts)

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.run(["scancel", "--full", f"--user={_user_name()}"], check=False, timeout_s=10)
            self._wait_quiet(10)
        for name in reversed(list(self.procs)):  # slurmd(s), slurmctld, munged
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        # Anything a job left behind (slurmstepd, mpirun, ranks) carries this
        # cluster's SLURM_CONF in its environment: end those, by PID.
        for pid in self.leftover_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _wait_quiet(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            queue = self.run(["squeue", "--noheader"], check=False)
            if queue.returncode != 0 or not queue.stdout.strip():
                return
            time.sleep(0.2)

    def leftover_pids(self) -> list[int]:
        """PIDs of live processes started under this cluster (found by SLURM_CONF)."""
        marker = f"SLURM_CONF={self.conf}".encode() + b"\0"
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker in (entry / "environ").read_bytes() + b"\0":
                    found.append(int(entry.name))
            except OSError:  # gone, or not ours to read
                continue
        return found

    def __enter__(self) -> "SlurmCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _user_name() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
