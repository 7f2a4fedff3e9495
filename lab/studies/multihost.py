#!/usr/bin/env python3
"""Intra- versus inter-host bandwidth and scaling across 1, 2, 4 hosts (network namespaces).

    sudo .venv/bin/python lab/studies/multihost.py --out multihost-out

Builds a throw-away testbed of hosts as network namespaces (``mpibench.testbed``),
then, each as its own mpirun job across the hosts:

1. ``multihost_links.py`` on 2 hosts x 2 ranks: ping-pong alpha/beta and
   blocking-Allreduce bus bandwidth for the link inside a host (shared memory)
   and the link between hosts (TCP over the bridge), measured alternately in
   one run -> ``links.json``;
2. ``python -m mpibench bench`` on 1, 2, 4 hosts with ``--ranks-per-host``
   ranks each -> ``hosts-<H>/bench.csv``, merged into ``multihost.csv`` beside
   a modelled time for a flat ring: every one of its 2(p-1) steps waits for
   the slowest hop, so with more than one host it runs at the inter-host
   (alpha, beta), inside one host at the intra-host one.

Every row says whether the ranks outnumber the machine's cores: all hosts share
the same cores, so "inter-host" here is loopback TCP through the kernel's
bridge, not a wire, and busy neighbours on the machine shift every figure.
Prints the intra/inter ratios measured side by side. Needs root.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mpibench.testbed import netns, run_script  # noqa: E402
from mpibench.testbed.job import mpi_env, run_job  # noqa: E402
from mpibench.testbed.launch import Launcher, Placement  # noqa: E402

HERE = Path(__file__).resolve().parent
COLUMNS = ["hosts", "ranks", "strategy", "bytes", "tag", "time_s", "busbw_gbps", "link",
           "oversubscribed"]


def measure_links(launcher: Launcher, timeout_s: float, rounds: int) -> dict:
    cmd = launcher.command(Placement(2, 2), [sys.executable, str(HERE / "multihost_links.py"), "2",
                                             str(rounds)], timeout_s)
    done = subprocess.run(cmd, env=mpi_env(launcher.testbed), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout_s + 30)
    for line in done.stdout.splitlines():
        if line.startswith('{"hosts"'):
            return json.loads(line)
    click.echo(f"multihost: could not run: the link measurement gave no result "
               f"(exit {done.returncode}):\n{done.stderr[-1500:]}", err=True)
    sys.exit(3)


def ring_model_s(nbytes: int, p: int, link: dict) -> float:
    """Flat ring all-reduce: 2(p-1) steps of nbytes/p each at one link's (alpha, beta)."""
    return 2 * (p - 1) * (link["alpha_s"] + nbytes / p * link["beta_s_per_byte"])


def bench_rows(out: Path, hosts: int, ranks: int, links: dict, cores: int) -> list[dict]:
    rows = []
    link_name = "intra" if hosts == 1 else "inter"
    over = "yes" if ranks > cores else "no"
    with open(out / "bench.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["tag"] != "measured":
                continue
            rows.append({"hosts": hosts, "ranks": ranks, "strategy": row["strategy"],
                         "bytes": row["bytes"], "tag": "measured", "time_s": row["time_avg_s"],
                         "busbw_gbps": row["busbw_gbps"], "link": link_name, "oversubscribed": over})
    for nbytes in sorted({int(r["bytes"]) for r in rows}):
        t = ring_model_s(nbytes, ranks, links[link_name])
        busbw = nbytes / t / 1e9 * 2 * (ranks - 1) / ranks if ranks > 1 else 0.0
        rows.append({"hosts": hosts, "ranks": ranks, "strategy": "ring", "bytes": nbytes,
                     "tag": "modelled", "time_s": f"{t:.6g}", "busbw_gbps": f"{busbw:.6g}",
                     "link": link_name, "oversubscribed": over})
    return rows


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="multihost-out",
              show_default=True)
@click.option("--host-counts", default="1,2,4", show_default=True, help="hosts per scaling point")
@click.option("--ranks-per-host", default=2, show_default=True)
@click.option("--sizes", default="64K,1M", show_default=True, help="bench message sizes")
@click.option("--strategies", default="ring,ps,native", show_default=True,
              help="bench strategies (add hier where it is registered)")
@click.option("--rounds", default=5, show_default=True,
              help="link measurements repeated, intra and inter alternating (medians reported)")
@click.option("--timeout-s", default=240.0, show_default=True, help="limit for each job")
def main(out, host_counts, ranks_per_host, sizes, strategies, rounds, timeout_s):
    """Links and scaling across testbed hosts; writes links.json and multihost.csv into OUT."""
    try:
        counts = sorted({int(c) for c in host_counts.split(",")})
    except ValueError:
        raise click.UsageError(f"--host-counts must be whole numbers, got {host_counts!r}")
    if counts[0] < 1 or ranks_per_host < 1:
        raise click.UsageError("host counts and --ranks-per-host must be at least 1")
    why = netns.unavailable()
    if why:
        click.echo(f"multihost: cannot run: {why}", err=True)
        sys.exit(3)
    out.mkdir(parents=True, exist_ok=True)
    cores = len(os.sched_getaffinity(0))
    rows, status = [], 0
    with netns.Testbed(max(counts + [2])) as testbed, tempfile.TemporaryDirectory(prefix=testbed.name) as tmp:
        testbed.wait_reachable()
        launcher = Launcher(testbed, Path(tmp))
        links = measure_links(launcher, timeout_s, rounds)
        (out / "links.json").write_text(json.dumps(links, indent=2) + "\n")
        for hosts in counts:
            point = out / f"hosts-{hosts}"
            ranks = hosts * ranks_per_host
            args = ["bench", "--sizes", sizes, "--strategies", strategies, "--iterations", "10"]
            result = run_job(launcher, Placement(hosts, ranks_per_host), args, point, timeout_s)
            if not (point / "bench.csv").exists():
                click.echo(f"hosts={hosts}: no bench.csv (exit {result.returncode})\n"
                           f"{result.stderr[-1500:]}", err=True)
                status = 3
                continue
            status = status or (1 if result.returncode else 0)
            rows += bench_rows(point, hosts, ranks, links, cores)
    with open(out / "multihost.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    _summary(links, rows, cores)
    sys.exit(status)


def _summary(links: dict, rows: list[dict], cores: int) -> None:
    intra, inter = links["intra"], links["inter"]
    click.echo(f"links (one run, {links['rounds']} rounds measured alternately, medians; "
               f"{links['ranks']} ranks on {cores} cores):")
    click.echo(f"  intra-host: alpha {intra['alpha_s'] * 1e6:8.1f} us  beta^-1 "
               f"{(intra['bandwidth_gbps'] or 0):6.2f} GB/s")
    click.echo(f"  inter-host: alpha {inter['alpha_s'] * 1e6:8.1f} us  beta^-1 "
               f"{(inter['bandwidth_gbps'] or 0):6.2f} GB/s")
    for a, b in zip(intra["allreduce"], inter["allreduce"]):
        click.echo(f"  Allreduce {a['bytes']:>9} B busbw: intra {a['busbw_gbps']:.3f} GB/s, "
                   f"inter {b['busbw_gbps']:.3f} GB/s, intra/inter {a['busbw_gbps'] / b['busbw_gbps']:.2f}x")
    click.echo("scaling (measured busbw GB/s; * = more ranks than cores):")
    for row in rows:
        if row["tag"] == "measured":
            mark = "*" if row["oversubscribed"] == "yes" else " "
            click.echo(f"  {row['hosts']} host(s) {row['ranks']:>2} ranks{mark} {row['strategy']:<7} "
                       f"{row['bytes']:>9} B  {float(row['busbw_gbps']):.3f}")
    click.echo("all hosts share this machine's cores: inter-host is TCP through a kernel bridge, "
               "not a wire")


if __name__ == "__main__":
    run_script(main, "multihost")
