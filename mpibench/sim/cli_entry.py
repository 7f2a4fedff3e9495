"""What the command line calls for ``--engine sim``: install the simulated process model first,
then read and check the input exactly as the real command does, then run the job simulated."""
from __future__ import annotations

from mpibench.base.config import UsageError

from .jobs import SimSettings, simulate_job, simulate_run


def settings_for(platform: str | None) -> SimSettings:
    """The simulated cluster of ``--platform`` (None: this host's default figures)."""
    if platform is None:
        return SimSettings()
    from .platform import load_platform

    return SimSettings(net=load_platform(platform).network())


def simulated_run(make_config, make_request, ranks: int, platform: str | None) -> int:
    """``run --engine sim``: the exit status of the simulated job."""
    from .process import install

    install()  # before anything imports mpi4py.MPI: the job's modules see the simulated one
    if ranks < 1:
        raise UsageError(f"--ranks must be at least 1, got {ranks}")
    settings = settings_for(platform)
    config = make_config()
    from mpibench.job.runner import prepare

    prepare(config, ranks)  # bad input: one line, exit 2, before any folder is made
    request = make_request(config)
    status, _ = simulate_run(config, request, ranks, settings)
    return status


def _platform(platform: str | None, placement: str | None, reduction_compute: bool = True):
    from dataclasses import replace

    from .platform import CLUSTER_100G, load_platform

    plat = load_platform(platform) if platform else CLUSTER_100G
    plat = replace(plat, placement=placement) if placement else plat
    return plat if reduction_compute else replace(plat, reduction_compute=False)


def predict_command(run_dir: str, platform: str | None, ranks: str | None = None, sizes: str | None = None,
                    placement: str | None = None) -> int:
    """``predict RUN``: simulated.csv (scale on the platform, p = 2 beside measured), then the page."""
    import shutil
    import tempfile
    from pathlib import Path

    from .predict import SCALE_RANKS, predict, write_rows
    from .process import install
    from .table import parse_counts

    install()
    folder = Path(run_dir)
    plat = _platform(platform, placement)
    scale = tuple(parse_counts(ranks, "--ranks")) if ranks else SCALE_RANKS
    wanted = parse_counts(sizes, "--sizes") if sizes else None
    work = Path(tempfile.mkdtemp(prefix="mpibench-predict-"))
    try:
        rows = predict(folder, plat, work, wanted, scale)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    path = write_rows(folder, rows)
    for row in rows:
        if row["kind"] == "host":
            print(f"p={row['ranks']} {row['strategy']:<6} step {float(row['step_s']) * 1e3:8.3f} ms  [{row['tag']}]")
    for note in sorted({row.get("notes", "") for row in rows} - {""}):
        print(f"predict: {note}")
    print(f"predict: {len(rows)} rows [simulated | modelled | measured] -> {path}", flush=True)
    return 0


def predict_table_command(platform: str | None, ranks: str | None, sizes: str | None, strategies: str | None,
                          placement: str | None, out: str | None, reduction_compute: bool = True) -> int:
    """``predict --ranks --sizes``: every strategy's all-reduce time on the platform, printed (and to CSV)."""
    from pathlib import Path

    from .table import TABLE_STRATEGIES, collective_rows, format_rows, parse_counts, write_rows

    plat = _platform(platform, placement, reduction_compute)
    names = tuple(s.strip() for s in strategies.split(",") if s.strip()) if strategies else TABLE_STRATEGIES
    rows = collective_rows(plat, parse_counts(ranks or "64,512,4096", "--ranks"),
                           parse_counts(sizes or "8,64K,64M", "--sizes"), names)
    print(f"platform: {plat.name}; {plat.ranks_per_node} ranks per node, {plat.placement} placement, "
          f"{plat.topology}{software_terms(plat)}")
    print(format_rows(rows), flush=True)
    if out:
        print(f"predict: {len(rows)} rows [simulated] -> {write_rows(Path(out), rows)}")
    return 0


def simulated_main_job(make_config, make_request, ranks: int, platform: str | None, parse_run_args) -> int:
    """The main job's scenarios (and its own short sweep) on ``ranks`` simulated processes.

    The benchmarks, calibration and scaling are measurements of this host and are left
    out (``MPIBENCH_NO_BENCH=1``): on the simulator they would time the simulator."""
    import os

    from .process import install

    install()
    if ranks < 1:
        raise UsageError(f"--ranks must be at least 1, got {ranks}")
    settings = settings_for(platform)
    os.environ["MPIBENCH_NO_BENCH"] = "1"
    config = make_config()
    request = make_request(config)
    from mpibench.drive.jobsweep import plan_job_sweep
    from mpibench.job.suite import main_job

    def plan_sweep(base, world, out):
        return plan_job_sweep(base, world, out, parse_run_args)

    print("engine sim [simulated]: the main job's scenarios; benchmarks left out (they would time the "
          "simulator)", flush=True)
    status, _ = simulate_job(lambda: main_job(config, request, plan_sweep), ranks, settings)
    return status


def software_terms(plat) -> str:
    """What the platform charges beside its links, for the table's heading ('' when nothing)."""
    from .platform import NO_FACTORS

    terms = []
    if plat.overhead_s:
        terms.append(f"{plat.overhead_s * 1e6:g} us per message and side")
    if plat.eager_limit_bytes != float("inf"):
        terms.append(f"rendezvous above {plat.eager_limit_bytes:g} B")
    if plat.lat_factor != NO_FACTORS or plat.bw_factor != NO_FACTORS:
        terms.append("SMPI latency/bandwidth factors")
    if not plat.reduction_compute:
        terms.append("no reduction compute")
    return "; " + ", ".join(terms) if terms else ""


def predict_profile_command(name: str, platform: str | None, ranks: str | None, strategies: str | None,
                            policy: str, local_batch: int, flops_per_s: float | None, placement: str | None,
                            out: str | None, reduction_compute: bool = True) -> int:
    """``predict --profile NAME``: a real model's overlapped step at 8 ... 4096 ranks per strategy."""
    import csv
    from dataclasses import asdict
    from pathlib import Path

    from mpibench.profiles import ProfileError, profile

    from .overlap import predict_step
    from .table import TABLE_STRATEGIES, parse_counts

    try:
        model = profile(name)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    if local_batch < 1:
        raise UsageError(f"--local-batch must be at least 1, got {local_batch}")
    if flops_per_s is not None and not flops_per_s > 0:
        raise UsageError(f"--flops-per-s must be positive, got {flops_per_s}")
    plat = _platform(platform, placement, reduction_compute)
    from mpibench.kernels.host_rate import host_flops_per_s

    rate, where = (flops_per_s, "as given") if flops_per_s else (host_flops_per_s(), "measured on this host")
    names = tuple(s.strip() for s in strategies.split(",") if s.strip()) if strategies else TABLE_STRATEGIES
    counts = parse_counts(ranks or "8,64,512,4096", "--ranks")
    print(f"profile: {model.name} ({model.parameters:,} parameters, {model.nbytes / 2**20:.1f} MiB of gradients; "
          f"{model.source}); local batch {local_batch} x {model.sample}")
    print(f"compute: {rate / 1e12:.3g} TFLOP/s ({where}); buckets: {policy}; platform: {plat.name} [simulated]")
    rows = [predict_step(plat, model, s, p, policy, local_batch, rate) for s in names for p in counts]
    print(f"{'strategy':<13}{'ranks':>7}{'buckets':>9}{'compute_s':>12}{'sync_s':>12}{'exposed_s':>12}"
          f"{'step_s':>12}{'efficiency':>11}")
    for r in rows:
        print(f"{r.strategy:<13}{r.ranks:>7}{r.buckets:>9}{r.compute_s:>12.4g}{r.sync_s:>12.4g}{r.exposed_s:>12.4g}"
              f"{r.step_s:>12.4g}{r.efficiency:>11.3f}")
    if out:
        path = Path(out)
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=["figure", "profile", *asdict(rows[0]), "flops_per_s"])
            writer.writeheader()
            for r in rows:
                writer.writerow({"figure": "simulated", "profile": model.name, **asdict(r), "flops_per_s": rate})
        print(f"predict: {len(rows)} rows [simulated] -> {path}")
    return 0
