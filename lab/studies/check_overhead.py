"""The cost of the evidence as a curve: history only, and history + online check, against checks off.

Runs `python -m mpibench run` under mpirun, over model sizes from the main
job's MLP (676 parameters, a step of about 0.2 ms) to steps of 10 ms and more,
alternating in interleaved pairs of launches "on" (every worker writes its
history; the first live member checks the case when it ends and writes the
verdict) and "off" (``MPIBENCH_HISTORY=off``: no history, nothing checked, the
run cannot be judged). A pair is the unit of repetition: both halves launched
back to back, so each ratio is paired in time. Each job reports its own times
measured with ``time.perf_counter`` inside the job (the training loop, and the
online check of every step, whose case verdict the verdict of record reuses;
nothing of the check runs inside the timed loop), so launcher start-up is not
counted. Steps are chosen per size so that the loop runs at least
``--min-loop-s`` seconds. Every rank's BLAS runs one thread (``OPENBLAS_NUM_THREADS``
and ``OMP_NUM_THREADS`` are 1 unless set): two ranks each starting a BLAS
thread per core time-share the cores, and on a loaded 2-core host that made a
34,052-parameter step 24 times slower (460 ms against 19 ms), which would
measure the threads, not the harness. Per size it prints every pair and the medians over
pairs of

    history:         off steps/s over on steps/s in the loop (what training pays)
    history+check:   off steps/s over on steps/s with the online check's time added

with 95 % order-statistic intervals over the pairs
(:mod:`mpibench.results.launchstats`), the host's load before and after, and
``--write`` writes ``lab/data/evidence_cost.csv``
(rows of other sizes already there are kept, so the curve can be measured one size per
command).

``--within-launch R`` pairs on and off inside each launch instead: ``--pairs`` launches of
``lab/studies/evidence_rounds.py``, each running the case R times with history and R times
without, interleaved (ABBA) in the one launch; a launch's cost is the median over its rounds,
and the interval is over launches. On a host whose launches land in states several-fold
apart, two launches of a pair can land in different states, which widens the pairs'
interval (at 4.4 ms, 6 pairs gave [0.65, 1.61]); both halves of a round inside one launch
share its state.

    python lab/studies/check_overhead.py [--ranks 2] [--pairs 6] [--within-launch R] [--sizes 16x32x16,...]
        [--check-every 1] [--write]
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from mpirun import run_mpi  # noqa: E402

LINE = re.compile(r"timing: (\d+) steps, loop ([0-9.]+) s, online check ([0-9.]+) s")
# features x hidden x local batch: the main job's MLP first, then larger models and batches (steps of 10 ms and more)
SIZES = "16x32x16,64x128x32,128x256x64,128x512x128"
CLASSES = 4


def load() -> str:
    """The host's load averages (1, 5, 15 min): figures taken on a busy host say so."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def parameters(features: int, hidden: int) -> int:
    return features * hidden + hidden + hidden * CLASSES + CLASSES


def timed_run(ranks: int, steps: int, strategy: str, history: bool, size: tuple, check_every: int = 1) -> dict:
    os.environ["MPIBENCH_HISTORY"] = "on" if history else "off"
    features, hidden, batch = size
    with tempfile.TemporaryDirectory() as out:
        job = run_mpi(ranks, ["run", "--strategy", strategy, "--steps", str(steps), "--check-every", str(check_every),
                              "--features", str(features), "--hidden", str(hidden), "--batch-size", str(batch),
                              "--classes", str(CLASSES), "--samples", str(max(1200, batch * ranks * 4))],
                      Path(out), timeout=900)
    expected = 0 if history else 3  # without a history there is nothing to judge
    if job.returncode != expected or not LINE.search(job.stdout):
        raise SystemExit(f"run exited {job.returncode} (expected {expected}):\n{job.text[-3000:]}")
    done, loop_s, online_s = LINE.search(job.stdout).groups()
    return {"steps": int(done), "loop_s": float(loop_s), "check_s": float(online_s)}


def one_size(args, size: tuple) -> dict:
    steps = args.steps
    while True:
        probe = timed_run(args.ranks, steps, args.strategy, False, size)
        if probe["loop_s"] >= args.min_loop_s or steps >= args.max_steps:
            break
        steps = min(args.max_steps, steps * 2)  # runs shorter than the floor measure start-up noise, not steps
    before = load()
    history, with_checks, off_step_s = [], [], []
    for i in range(args.pairs):
        on = timed_run(args.ranks, steps, args.strategy, True, size, args.check_every)
        plain = timed_run(args.ranks, steps, args.strategy, False, size)
        history.append(on["loop_s"] / plain["loop_s"] * plain["steps"] / on["steps"])
        with_checks.append((on["loop_s"] + on["check_s"]) / plain["loop_s"] * plain["steps"] / on["steps"])
        off_step_s.append(plain["loop_s"] / plain["steps"])
        print(f"  pair {i + 1}: off {off_step_s[-1] * 1e3:.3f} ms/step; history {history[-1]:.2f}x, "
              f"history + check {with_checks[-1]:.2f}x (check {on['check_s']:.3f} s)", flush=True)
    return row(size, steps, args, history, with_checks, off_step_s, before) | {
        "design": f"launch pairs: {args.pairs} on/off pairs of launches"}


def row(size: tuple, steps: int, args, history: list, with_checks: list, off_step_s: list, before: str) -> dict:
    """One size's CSV row: medians and 95 % order-statistic intervals over the units (pairs or launches)."""
    from mpibench.results.launchstats import median_interval

    h, c, s = median_interval(history), median_interval(with_checks), median_interval(off_step_s)
    features, hidden, batch = size
    return {"features": features, "hidden": hidden, "batch": batch, "parameters": parameters(features, hidden),
            "steps": steps, "pairs": args.pairs, "confidence_pct": round(h.coverage * 100, 1),
            "step_off_ms": s.median * 1e3, "step_off_ms_low": s.low * 1e3, "step_off_ms_high": s.high * 1e3,
            "history_cost": h.median, "history_cost_low": h.low, "history_cost_high": h.high,
            "with_check_cost": c.median, "with_check_cost_low": c.low, "with_check_cost_high": c.high,
            "load_before": before, "load_after": load()}


ROUND = re.compile(r"round \d+: on ([0-9.]+) s check ([0-9.]+) s off ([0-9.]+) s steps (\d+) (\d+)")


def rounds_launch(args, size: tuple, steps: int, rounds: int, warmup: int = 1) -> list[tuple]:
    """One launch of ``lab/studies/evidence_rounds.py``: per round (on s, check s, off s, on steps, off steps)."""
    from mpirun import mpirun_command, run_command

    features, hidden, batch = size
    cmd = mpirun_command() + ["-n", str(args.ranks), sys.executable, str(ROOT / "lab" / "studies" / "evidence_rounds.py"),
                              "--rounds", str(rounds), "--warmup", str(warmup), "--steps", str(steps),
                              "--features", str(features), "--hidden", str(hidden), "--batch", str(batch),
                              "--classes", str(CLASSES), "--strategy", args.strategy,
                              "--check-every", str(args.check_every)]
    job = run_command(cmd, timeout=900)
    found = [tuple(float(x) for x in m.groups()) for m in ROUND.finditer(job.stdout)]
    if job.returncode != 0 or len(found) != rounds:
        raise SystemExit(f"evidence_rounds exited {job.returncode} with {len(found)} of {rounds} rounds:\n"
                         f"{job.text[-3000:]}")
    return found


def within_launch_size(args, size: tuple) -> dict:
    """``--within-launch R``: ``--pairs`` launches, each R interleaved on/off rounds; a launch's
    cost is the median over its rounds of on/off per step, and the interval is over launches."""
    probe = rounds_launch(args, size, args.steps, 1)[0]
    steps = max(args.steps, min(args.max_steps, int(args.min_loop_s / (probe[2] / probe[4])) + 1))
    before = load()
    history, with_checks, off_step_s = [], [], []
    for i in range(args.pairs):
        found = rounds_launch(args, size, steps, args.within_launch)
        history.append(float(np.median([(on / n_on) / (off / n_off) for on, _, off, n_on, n_off in found])))
        with_checks.append(float(np.median([((on + c) / n_on) / (off / n_off) for on, c, off, n_on, n_off in found])))
        off_step_s.append(float(np.median([off / n_off for _, _, off, _, n_off in found])))
        print(f"  launch {i + 1}: off {off_step_s[-1] * 1e3:.3f} ms/step; history {history[-1]:.3f}x, "
              f"history + check {with_checks[-1]:.2f}x (median of {len(found)} rounds)", flush=True)
    return row(size, steps, args, history, with_checks, off_step_s, before) | {
        "design": f"within-launch: {args.pairs} launches x {args.within_launch} on/off rounds"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Two ranks: more than the host's cores would time the time-sharing, not the harness.
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=100, help="the first try per size; doubled up to --min-loop-s")
    parser.add_argument("--max-steps", type=int, default=20000)
    parser.add_argument("--pairs", type=int, default=6,
                        help="interleaved on/off launch pairs per size (with --within-launch: launches per size)")
    parser.add_argument("--within-launch", type=int, default=0, metavar="R",
                        help="pair on and off inside each launch, R interleaved rounds per launch")
    parser.add_argument("--strategy", default="native")
    parser.add_argument("--sizes", default=SIZES, help="features x hidden x local batch, comma-separated")
    parser.add_argument("--min-loop-s", type=float, default=2.0)  # 0: exactly --steps
    parser.add_argument("--check-every", type=int, default=1,
                        help="the online check's stride (the offline verdict still judges every step)")
    parser.add_argument("--write", action="store_true", help="write lab/data/evidence_cost.csv")
    args = parser.parse_args()
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    unit = (f"{args.pairs} launches x {args.within_launch} interleaved on/off rounds" if args.within_launch
            else f"{args.pairs} interleaved on/off pairs of launches")
    print(f"{args.ranks} ranks, {args.strategy}, {unit} per size, online check "
          f"every {args.check_every}; load before {load()}", flush=True)
    rows = []
    for size in sizes:
        print(f"size {'x'.join(map(str, size))} ({parameters(*size[:2])} parameters):", flush=True)
        rows.append(within_launch_size(args, size) if args.within_launch else one_size(args, size))
        r = rows[-1]
        if args.write:  # after every size, so a run stopped early keeps what it measured
            write(rows, args)
        print(f"  {r['step_off_ms']:.3f} ms/step off; history {r['history_cost']:.2f}x "
              f"[{r['history_cost_low']:.2f}, {r['history_cost_high']:.2f}], history + check "
              f"{r['with_check_cost']:.2f}x [{r['with_check_cost_low']:.2f}, {r['with_check_cost_high']:.2f}] "
              f"({r['confidence_pct']} % intervals over {r['pairs']} {'launches' if args.within_launch else 'pairs'}); load {r['load_before']} -> "
              f"{r['load_after']}", flush=True)


def write(rows: list[dict], args) -> None:
    import pandas as pd

    path = ROOT / "lab" / "data" / "evidence_cost.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    frame = pd.DataFrame(rows).assign(date=date, ranks=args.ranks, check_every=args.check_every,
                                      blas_threads=os.environ["OPENBLAS_NUM_THREADS"])
    if path.exists():  # other sizes' rows stay (each carries its own date and load): one size per command fits
        old = pd.read_csv(path, keep_default_na=False)
        size = ["features", "hidden", "batch"]
        if set(size) <= set(old.columns):
            kept = old[~old[size].apply(tuple, axis=1).isin(set(frame[size].apply(tuple, axis=1)))]
            frame = pd.concat([kept, frame], ignore_index=True).sort_values(["parameters", "batch"], kind="stable")
    frame.to_csv(path, index=False, float_format="%.4g")
    print(f"# wrote {path} ({len(rows)} sizes measured now, {len(frame)} in the file)", flush=True)
    findings = ROOT / "lab" / "findings.md"
    findings.write_text(with_curve(findings.read_text(), pd.read_csv(path, keep_default_na=False)))
    print(f"# wrote the curve into {findings}", flush=True)


BEGIN, END = "<!-- evidence-cost: written by lab/studies/check_overhead.py --write -->", "<!-- evidence-cost: end -->"


def curve_table(frame) -> str:
    """lab/findings.md's table of the curve: one row per model size, from evidence_cost.csv."""
    lines = ["| parameters | local batch | step without history (ms) | history only | history + online check "
             "| paired |", "|---:|---:|---:|---:|---:|---|"]
    for r in frame.sort_values(["parameters", "batch"], kind="stable").itertuples(index=False):
        every = int(float(getattr(r, "check_every", 1) or 1))
        check = (f"{float(r.with_check_cost):.2f}x [{float(r.with_check_cost_low):.2f}, "
                 f"{float(r.with_check_cost_high):.2f}]" if every == 1 else f"not measured (checked every {every} steps)")
        lines.append(f"| {int(r.parameters):,} | {int(r.batch)} | {float(r.step_off_ms):.2f} | "
                     f"{float(r.history_cost):.2f}x [{float(r.history_cost_low):.2f}, {float(r.history_cost_high):.2f}] | "
                     f"{check} | {paired(r)} |")
    return "\n".join(lines)


def paired(r) -> str:
    """How a row's on/off ratios were paired (rows written before the column existed: launch pairs)."""
    design = str(getattr(r, "design", "") or "")
    return "within each launch" if design.startswith("within") else "launch pairs"


def with_curve(text: str, frame) -> str:
    """``text`` with the block between the markers replaced by :func:`curve_table`."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"check_overhead: lab/findings.md has no block between {BEGIN} and {END}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{curve_table(frame)}\n{END}{tail}"


if __name__ == "__main__":
    main()
