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


def simulated_run(install_mutant, make_config, make_request, ranks: int, platform: str | None) -> int:
    """``run --engine sim``: the exit status of the simulated job."""
    from .process import install

    install()  # before anything imports mpi4py.MPI: the job's modules see the simulated one
    if ranks < 1:
        raise UsageError(f"--ranks must be at least 1, got {ranks}")
    settings = settings_for(platform)
    install_mutant()
    config = make_config()
    from mpibench.job.runner import prepare

    prepare(config, ranks)  # bad input: one line, exit 2, before any folder is made
    request = make_request(config)
    status, _ = simulate_run(config, request, ranks, settings)
    return status


def predict_command(run_dir: str, platform: str | None) -> int:
    """``predict RUN``: simulated.csv (scale on the platform, p = 2 beside measured), then the page."""
    import shutil
    import tempfile
    from pathlib import Path

    from .platform import CLUSTER_100G, load_platform
    from .predict import predict, write_rows
    from .process import install

    install()
    folder = Path(run_dir)
    plat = load_platform(platform) if platform else CLUSTER_100G
    work = Path(tempfile.mkdtemp(prefix="mpibench-predict-"))
    try:
        rows = predict(folder, plat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    path = write_rows(folder, rows)
    for row in rows:
        if row["kind"] == "host":
            print(f"p={row['ranks']} {row['strategy']:<6} step {float(row['step_s']) * 1e3:8.3f} ms  [{row['tag']}]")
    print(f"predict: {len(rows)} rows [simulated | modelled | measured] -> {path}", flush=True)
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
