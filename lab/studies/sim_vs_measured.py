"""Simulated beside measured on this host: each run folder's step, part by part, at p = 2 and p = 1.

For every run folder given (a main job's ``make run NP=2`` output: steps.csv,
scaling.csv, the calibration in run.json), every strategy (ring, PS, auto) is
replayed on the simulated engine as ``predict`` replays it
(:mod:`mpibench.sim.hostreplay`: messages from the run's calibration, each
rank's own code charged its CPU time here times the speed ratio the run's
compute part gives). It prints, per folder, strategy and rank count, the
measured and the simulated step and each of its parts, and whether the step is
within +-25 %; then the median over the folders of each figure. Simulated
figures charge the host's CPU time, so they move with this host's load: run it
as a timing measurement (``flock /work/measure/timing.lock ...``) and record
``uptime`` beside it.

    python lab/studies/sim_vs_measured.py DIR [DIR ...] [--repeats 3] [--no-one-rank] [--strategies ring,ps,auto]
        [--job NAME --write]

Each folder is one launch, replayed with that launch's own calibration. ``--write`` (with
``--job NAME``) puts one row per launch, strategy and rank count into
``lab/data/sim_vs_measured.csv`` (rows of the same job replaced): both sides' parts,
the simulated over measured step and whether it is within 25 %, and the simulated
reduction part by part, each from replays of the same job on the network alone
(nothing charged for the host's CPU, so deterministic): ``latency_us`` (the calibration's
alpha only), ``bandwidth_us`` (beta only), ``reduction_us`` (gamma only) and
``python_us``, the rest of the simulated reduction (the ranks' own code, charged its CPU
time). A closing line per strategy counts the launches within 25 %.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "lab" / "data" / "sim_vs_measured.csv"

TOLERANCE = 0.25
SHOWN = ("step_s", "compute_s", "sync_s", "rest_s", "evidence_s", "check_s")


def _line(label: str, parts: dict) -> str:
    return f"  {label:<10}" + "".join(f"{parts[k] * 1e6:11.1f}" if k in parts else f"{'':>11}" for k in SHOWN)


def _verdict(measured: float | None, simulated: float | None) -> str:
    if not measured or simulated is None:
        return "no figure"
    ratio = simulated / measured
    return f"{ratio - 1:+.0%} ({'within' if abs(ratio - 1) <= TOLERANCE else 'outside'} +-{TOLERANCE:.0%})"


def network_parts(config, ranks: int, net, work: Path) -> dict:
    """The simulated reduction (``sync_s``) on the network alone, and with only its latency,
    only its bandwidth, only its reduction term: virtual time, no CPU charged."""
    import io
    from contextlib import redirect_stdout

    from mpibench.sim.hostreplay import steps_parts
    from mpibench.sim.jobs import SimSettings, simulate_run

    zero = {"alpha_s": 0.0, "net_alpha_s": 0.0, "beta_s_per_byte": 0.0, "net_beta_s_per_byte": 0.0,
            "gamma_s_per_byte": 0.0}
    keep = {"network": (), "latency": ("alpha_s", "net_alpha_s"),
            "bandwidth": ("beta_s_per_byte", "net_beta_s_per_byte"), "reduction": ("gamma_s_per_byte",)}
    out = {}
    for name, kept in keep.items():
        variant = net if name == "network" else replace(net, **{k: v for k, v in zero.items() if k not in kept})
        folder = work / f"net-{name}"
        with redirect_stdout(io.StringIO()):
            simulate_run(config, str(folder), ranks, SimSettings(net=variant, measure_compute=False), quiet=True)
        out[name] = steps_parts(folder / "steps.csv", config.strategy).get("sync_s")
    return out


def csv_row(job: str, folder: Path, c, parts: dict, cal: dict) -> dict:
    us = lambda v: round(v * 1e6, 2) if v is not None else None  # noqa: E731
    ratio = c.ratio()
    row = {"job": job, "launch": folder.name, "strategy": c.strategy, "ranks": c.ranks,
           **{f"measured_{k[:-2]}_us": us(c.measured.get(k)) for k in SHOWN},
           **{f"simulated_{k[:-2]}_us": us(c.simulated.get(k)) for k in SHOWN},
           "simulated_over_measured": round(ratio, 3) if ratio else None,
           "within_25_pct": bool(ratio is not None and abs(ratio - 1) <= TOLERANCE),
           "cpu_scale": round(statistics.median(c.cpu_scales), 3) if c.cpu_scales else None}
    if parts:
        network = parts.get("network")
        row.update({"latency_us": us(parts.get("latency")), "bandwidth_us": us(parts.get("bandwidth")),
                    "reduction_us": us(parts.get("reduction")),
                    "python_us": us(c.simulated["sync_s"] - network) if network is not None
                    and "sync_s" in c.simulated else None})
    row.update({"alpha_step_us": us(cal.get("alpha_step_s") or cal.get("alpha_s")),
                "beta_step_ns_per_byte": round((cal.get("beta_step_s_per_byte") or cal["beta_s_per_byte"]) * 1e9, 4)})
    return row


def write(job: str, rows: list[dict], loads: list[float]) -> None:
    import pandas as pd

    frame = pd.DataFrame(rows).assign(host_cores=os.cpu_count(), load_1m_range=f"{min(loads):.2f}-{max(loads):.2f}",
                                      date_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"))
    CSV.parent.mkdir(parents=True, exist_ok=True)
    if CSV.exists():
        old = pd.read_csv(CSV, keep_default_na=False)
        frame = pd.concat([old[old.job.astype(str) != job], frame], ignore_index=True)
    frame.to_csv(CSV, index=False)
    print(f"# wrote {CSV} ({len(rows)} rows of job {job})", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-one-rank", action="store_true", help="p = 2 only")
    parser.add_argument("--strategies", default="ring,ps,auto")
    parser.add_argument("--job", help="this job's name in lab/data/sim_vs_measured.csv (with --write)")
    parser.add_argument("--write", action="store_true", help="write this job's rows (needs --job)")
    args = parser.parse_args(argv)
    if args.write and not args.job:
        print("sim_vs_measured: --write needs --job NAME", file=sys.stderr)
        return 2
    loads, rows = [os.getloadavg()[0]], []
    from mpibench.sim.process import install

    install()
    from mpibench.base.config import UsageError
    from mpibench.sim.hostreplay import compare, network, run_config
    from mpibench.sim.predict import read_run

    header = f"  {'':<10}" + "".join(f"{k[:-2] + ' us':>11}" for k in SHOWN)
    table: dict = {}
    for folder in map(Path, args.folders):
        try:
            info, cal = read_run(folder)
        except UsageError as exc:
            print(f"sim_vs_measured: {exc}", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory(prefix="sim-vs-measured-") as work:
            found = compare(folder, info, cal, Path(work), args.strategies.split(","), repeats=args.repeats, one_rank=not args.no_one_rank)
            parts = {c.strategy: network_parts(run_config(info, strategy=c.strategy), 2, network(cal),
                                               Path(work) / f"parts-{c.strategy}")
                     for c in found if c.ranks == 2} if args.write else {}
        loads.append(os.getloadavg()[0])
        for c in found:
            rows.append(csv_row(args.job or "", folder, c, parts.get(c.strategy, {}) if c.ranks == 2 else {}, cal))
            scales = " ".join(f"{s:.2f}" for s in c.cpu_scales)
            print(f"{folder.name} {c.strategy} p={c.ranks}: step {_verdict(c.measured.get('step_s'), c.simulated.get('step_s'))}"
                  f"  [cpu_scale {scales}]")
            print(header)
            print(_line("measured", c.measured))
            print(_line("simulated", c.simulated))
            if rows[-1].get("latency_us") is not None:
                r = rows[-1]
                print(f"  simulated reduction, part by part: latency {r['latency_us']:.1f} us, bandwidth "
                      f"{r['bandwidth_us']:.1f} us, reduction {r['reduction_us']:.1f} us, Python {r['python_us']:.1f} us")
            table.setdefault((c.strategy, c.ranks), []).append(c)
    print(f"\nmedian over {len(args.folders)} folder(s) [measured | simulated]")
    print(header)
    for (strategy, ranks), found in table.items():
        med = {tag: {k: statistics.median(getattr(c, tag)[k] for c in found) for k in SHOWN
                     if all(k in getattr(c, tag) for c in found)} for tag in ("measured", "simulated")}
        print(f"{strategy} p={ranks}: step {_verdict(med['measured'].get('step_s'), med['simulated'].get('step_s'))}")
        print(_line("measured", med["measured"]))
        print(_line("simulated", med["simulated"]))
    for (strategy, ranks), found in table.items():
        within = sum(1 for c in found if c.ratio() is not None and abs(c.ratio() - 1) <= TOLERANCE)
        print(f"{strategy} p={ranks}: simulated step within +-{TOLERANCE:.0%} of measured in {within} of "
              f"{len(found)} launch(es)")
    print(f"load (1 min): {min(loads):.2f}-{max(loads):.2f}")
    if args.write:
        write(args.job, rows, loads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
