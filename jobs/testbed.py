#!/usr/bin/env python3
"""Run an mpibench command across throw-away hosts (network namespaces) on this machine.

    sudo .venv/bin/python jobs/testbed.py --hosts 3 -- run --strategy ring --scenario none
    sudo .venv/bin/python jobs/testbed.py --hosts 3 --net-partition --hold-s 2 -- \\
        run --strategy ps --steps 8 --deadline-s 1

Brings up HOSTS namespaces on a private bridge (198.18.0.0/24, no route off it),
launches ``mpirun`` in the first with an rsh agent that starts Open MPI's
daemons in the others (shared memory inside a host, TCP between hosts), waits
for the job under a hard timeout and tears everything down, also on errors and
Ctrl-C. With ``--net-partition`` a seeded real network cut (nftables in the
namespaces) separates a minority of hosts before a step and heals ``--hold-s``
seconds later; ``netfaults.csv`` beside the run's records says when.

Writes ``testbed.json`` (hosts, placement, command, timeline, verdict) into the
output folder. Exit status: 0 passed (or the cut was tolerated), 1 violated or
no progress, 2 bad usage, 3 no verdict / the testbed could not be built.
"""
from __future__ import annotations

import json
import signal
import sys
import tempfile
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mpibench.testbed import netfault, netns, run_script, verdict  # noqa: E402
from mpibench.testbed.job import run_job  # noqa: E402
from mpibench.testbed.launch import Launcher, Placement  # noqa: E402

# Open MPI's own heartbeat detector (off by default in Open MPI 5): with it, a cut
# longer than the timeout turns into declared process failures.
DETECTOR = ["--mca", "mpi_ft_detector", "true", "--mca", "mpi_ft_detector_period", "0.5",
            "--mca", "mpi_ft_detector_timeout", "2"]


def _option(args, name, default):
    return args[args.index(name) + 1] if name in args[:-1] else default


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--hosts", default=3, show_default=True, help="hosts (namespaces) to bring up")
@click.option("--ranks-per-host", default=1, show_default=True, help="MPI ranks on each host")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="testbed-out",
              show_default=True, help="output folder of the mpibench run")
@click.option("--timeout-s", default=300.0, show_default=True, help="hard limit for the job")
@click.option("--net-partition", is_flag=True, help="cut a seeded minority of hosts off mid-run")
@click.option("--net-seed", type=int, default=None, help="seed of the cut (default: the run's --seed)")
@click.option("--hold-s", default=2.0, show_default=True, help="seconds the cut stays in place")
@click.option("--detector/--no-detector", default=False, show_default=True,
              help="Open MPI's heartbeat failure detector (0.5 s period, 2 s timeout)")
@click.option("--cleanup", is_flag=True, help="only remove what testbeds of dead processes left")
@click.argument("mpibench_args", nargs=-1, type=click.UNPROCESSED)
def main(hosts, ranks_per_host, out, timeout_s, net_partition, net_seed, hold_s, detector,
         cleanup, mpibench_args):
    """Run ``python -m mpibench MPIBENCH_ARGS`` across HOSTS network namespaces."""
    if cleanup:
        for name in netns.stale_testbeds():
            click.echo(f"removing {name}: {', '.join(netns.leftovers(name))}")
            netns.remove_stale(name)
        sys.exit(0)
    args = list(mpibench_args) or ["run", "--scenario", "none"]
    if hosts < 1 or ranks_per_host < 1:
        raise click.UsageError("--hosts and --ranks-per-host must be at least 1")
    if net_partition and ("--scenario" in args or args[0] != "run"):
        raise click.UsageError("--net-partition runs `run` with its own schedule: leave out --scenario")
    steps = int(_option(args, "--steps", "24"))
    partition = None
    if net_partition:  # bad usage is judged before the tools: it is bad on any machine
        seed = net_seed if net_seed is not None else int(_option(args, "--seed", "0"))
        try:
            partition = netfault.draw(seed, hosts, steps, hold_s)
        except ValueError as exc:
            raise click.UsageError(str(exc))
    why = netns.unavailable()
    if why:
        click.echo(f"testbed: cannot run: {why}", err=True)
        sys.exit(3)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))  # teardown runs on SIGTERM too
    placement = Placement(hosts, ranks_per_host)
    with netns.Testbed(hosts) as testbed, tempfile.TemporaryDirectory(prefix=testbed.name) as tmp:
        testbed.wait_reachable()
        launcher = Launcher(testbed, Path(tmp))
        click.echo(f"testbed {testbed.name}: " + ", ".join(f"{h.name}={h.address}" for h in testbed.hosts))
        if partition:
            click.echo(f"testbed: {partition.text()}")
        result = run_job(launcher, placement, args, out, timeout_s,
                         DETECTOR if detector else [], partition)
        if partition:
            found = verdict.judge_partition(out, result.text, steps, partition, ranks_per_host,
                                            result.timeline)
        else:
            found = verdict.judge(out, result.text, steps) if args[0] == "run" else \
                verdict.Verdict(0 if result.returncode == 0 else 1, "exit-status",
                                f"mpirun exited {result.returncode}")
        _write_summary(out, testbed, placement, launcher, args, result, partition, found, detector)
        sys.stdout.write(result.stdout.rstrip("\n") + "\n")
        sys.stderr.write(result.stderr[-4000:].rstrip("\n") + "\n")
        sys.stderr.flush()
    click.echo(found.line())
    for line in found.log_lines[:6]:
        click.echo(f"  log: {line}")
    left = netns.leftovers(testbed.name)
    if left:
        click.echo(f"testbed: left behind: {', '.join(left)}", err=True)
        sys.exit(3)
    sys.exit(found.status)


def _write_summary(out, testbed, placement, launcher, args, result, partition, found, detector):
    if not Path(out).is_dir():
        return
    info = {
        "testbed": testbed.name,
        "hosts": [{"name": h.name, "address": h.address} for h in testbed.hosts],
        "ranks_per_host": placement.ranks_per_host,
        "command": launcher.replay_text(placement, ["python", "-m", "mpibench", *args]),
        "mpirun_exit": result.returncode,
        "detector": detector,
        "verdict": {"outcome": found.outcome, "status": found.status, "detail": found.detail,
                    "log_lines": list(found.log_lines)},
    }
    if partition:
        info["network_partition"] = {
            "sides_hosts": [list(s) for s in partition.sides], "at_step": partition.at_step,
            "hold_s": partition.hold_s, "gate_s": partition.gate_s,
            "timeline_s": [{"event": w, "at_s": round(t, 3), "steps_committed": n}
                           for w, t, n in result.timeline.events],
            "dropped_packets": result.timeline.dropped,
        }
    (Path(out) / "testbed.json").write_text(json.dumps(info, indent=2) + "\n")


if __name__ == "__main__":
    run_script(main, "testbed")
