"""The device check's verdict and summary, read from what its runs wrote.

    python jobs/gpu_check_summary.py OUT_DIR WORK_DIR

``WORK_DIR`` holds one folder per run (``main-<policy>``, ``native-<policy>``,
``bench-<policy>``). For every training run: every scheduled step of every
scenario/strategy was checked and every check passed (the records decide, not
the launcher's status), and on a device each step's transfers match what the
policy promises: ``staged`` adds exactly the bytes MPI read to the
device-to-host copies and the bytes it wrote to the host-to-device copies,
``cuda-aware`` adds none. Merges the bench rows into ``OUT_DIR/bench.csv`` and
the transfer rows into ``OUT_DIR/transfers.csv`` (a ``policy`` column tells
the runs apart), and prints kernel and bench figures against the device's
memory bandwidth. Exit status 0 when every check passed, 1 otherwise.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd



def passed(frame: pd.DataFrame) -> pd.Series:
    return frame["passed"].astype(str).str.lower() == "true"


def compute_side(strategy: str, n_params: int, members: int) -> tuple[int, int]:
    """Bytes the device back-end itself copies up and down per step on the recording rank.

    Written out here, from the back-end's documented behaviour, not imported from it.
    """
    if strategy == "ps":
        base, extra = divmod(n_params, members)
        served = base + (1 if extra else 0)  # shard 0, the one rank 0 serves
        return 4 * (n_params + members) + 4 * served, 4 * (n_params + members) + 4
    return 4 * (n_params + 1) + 4 * n_params, 4 * n_params + 4


def check_run(folder: Path, problems: list[str]) -> pd.DataFrame | None:
    """The run's invariants and transfers; returns its transfer rows (or None)."""
    name = folder.name
    info = json.loads((folder / "run.json").read_text()) if (folder / "run.json").exists() else None
    checks_path = folder / "invariants.csv"
    if info is None or not checks_path.exists():
        problems.append(f"{name}: no run.json or invariants.csv (the run did not get far)")
        return None
    checks = pd.read_csv(checks_path, keep_default_na=False)
    steps = info["config"]["steps"]
    for (scenario, strategy), mine in checks.groupby(["scenario", "strategy"]):
        missing = sorted(set(range(steps)) - set(mine["step"]))
        if missing:
            problems.append(f"{name}: {scenario}/{strategy} steps {missing} never checked")
        bad = mine[~passed(mine)]
        if len(bad):
            first = bad.iloc[0]
            problems.append(f"{name}: {scenario}/{strategy} step {first['step']} {first['invariant']}: "
                            f"{first['detail']}")
    plan = info.get("plan")
    if plan:
        seen = {f"{s}/{k}" for s, k in zip(checks["scenario"], checks["strategy"])}
        problems += [f"{name}: {p} has no checks" for p in plan if p not in seen]
    if not (folder / "transfers.csv").exists():
        if info.get("device", {}).get("backend") not in (None, "numpy"):
            problems.append(f"{name}: a device run without transfers.csv")
        return None
    rows = pd.read_csv(folder / "transfers.csv", keep_default_na=False)
    stepped = pd.read_csv(folder / "steps.csv", keep_default_na=False)
    members = {(r.scenario, r.strategy, r.step): len(str(r.contributing).split()) for r in stepped.itertuples()}
    cfg = info["config"]
    n_params = cfg["features"] * cfg["hidden"] + cfg["hidden"] + cfg["hidden"] * cfg["classes"] + cfg["classes"]
    for r in rows.itertuples():
        h2d, d2h = compute_side(r.strategy, n_params, members[(r.scenario, r.strategy, r.step)])
        staged = r.policy == "staged"
        want = (h2d + (r.mpi_in_bytes if staged else 0), d2h + (r.mpi_out_bytes if staged else 0))
        if (r.h2d_bytes, r.d2h_bytes) != want:
            problems.append(f"{name}: {r.scenario}/{r.strategy} step {r.step} under {r.policy}: copied "
                            f"(h2d, d2h) = {(r.h2d_bytes, r.d2h_bytes)} bytes, the policy promises {want}")
    return rows.assign(run=name)


def kernel_lines(out: Path) -> list[str]:
    path = out / "kernels.csv"
    if not path.exists():
        return ["kernels: no figures"]
    k = pd.read_csv(path)
    big = k[k["bytes"] == k["bytes"].max()]
    lines = [f"kernels at {big['bytes'].iloc[0] >> 20} MiB on {big['device'].iloc[0]}:"]
    for _, r in big.iterrows():
        peak = f", {r['vs_peak']:.0%} of peak" if pd.notna(r["vs_peak"]) else ""
        lines.append(f"  {r['op']:<15} {r['gbps']:8.1f} GB/s ({r['vs_copy']:.2f}x copy{peak})")
    return lines


def bench_lines(work: Path, out: Path) -> list[str]:
    frames = []
    for folder in sorted(work.glob("bench-*")):
        if (folder / "bench.csv").exists():
            frames.append(pd.read_csv(folder / "bench.csv").assign(policy=folder.name.removeprefix("bench-")))
    if not frames:
        return ["bench: no figures"]
    bench = pd.concat(frames)
    bench.to_csv(out / "bench.csv", index=False)
    measured = bench[bench["tag"] == "measured"] if "tag" in bench else bench
    lines = []
    for policy, rows in measured.groupby("policy"):
        wide = rows.pivot_table(index="bytes", columns="strategy", values="busbw_gbps")
        lines.append(f"bench p={int(rows['ranks'].max())} under {policy} (busbw GB/s; errors "
                     f"{int(rows['errors'].sum())}):")
        lines += ["  " + line for line in wide.to_string(float_format=lambda v: f"{v:.2f}").splitlines()]
        if {"ring", "native"} <= set(wide.columns):
            lines.append("  ring / native: " + " ".join(f"{r / n:.2f}" for r, n in zip(wide["ring"], wide["native"])))
    return lines


def main(out: Path, work: Path) -> int:
    problems: list[str] = []
    transfer_frames = []
    runs = sorted(p for p in work.iterdir() if p.is_dir() and not p.name.startswith("bench-"))
    if not runs:
        problems.append("no training run left any output")
    for folder in runs:
        rows = check_run(folder, problems)
        if rows is not None:
            transfer_frames.append(rows)
    lines = kernel_lines(out) + bench_lines(work, out)
    if transfer_frames:
        transfers = pd.concat(transfer_frames)
        transfers.to_csv(out / "transfers.csv", index=False)
        lines.append("transfers per step on the recording rank (first step of each run/strategy):")
        cols = ["h2d", "h2d_bytes", "d2h", "d2h_bytes", "mpi_out", "mpi_out_bytes", "mpi_in", "mpi_in_bytes",
                "syncs"]
        first = transfers.groupby(["run", "strategy"]).head(1)
        lines += ["  " + line for line in first[["run", "strategy", "policy", *cols]].to_string(index=False).splitlines()]
    for folder in runs:
        info_path = folder / "run.json"
        if info_path.exists():
            device = json.loads(info_path.read_text()).get("device")
            lines.append(f"{folder.name} device: {json.dumps(device, sort_keys=True)}")
    lines += [f"PROBLEM {p}" for p in problems]
    lines.append(f"checks: {len(runs)} training runs, {len(problems)} problem(s)")
    print("\n".join(lines))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python jobs/gpu_check_summary.py OUT_DIR WORK_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
