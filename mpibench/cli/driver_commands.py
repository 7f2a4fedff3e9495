"""The commands that launch their own ``mpirun`` jobs (no MPI here): ``sweep`` and ``selftest``."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from mpibench.base.config import UsageError
from mpibench.base.parsing import parse_list

from mpibench.selftest import COMMAND_HELP as SELFTEST_HELP
from mpibench.sim.rounds import MODELLED_ONLY
from mpibench.sim.table import TABLE_STRATEGIES

from .options import out_options, out_request, with_options
from .usage import could_not_run

MPIEXEC_HELP = ("launcher for the {what} [default: $MPIBENCH_MPIEXEC, else this Python's mpirun with the "
                "flags 'make run' uses]")


def _check_sweep_numbers(seeds, steps, jobs, cases_per_launch, first_seed, shrink_runs, time_budget,
                         case_deadline) -> None:
    if seeds < 1 or steps < 1 or jobs < 1 or cases_per_launch < 1 or first_seed < 0 or shrink_runs < 0:
        raise UsageError("--seeds, --steps, --jobs and --cases-per-launch must be positive, --first-seed "
                         "and --shrink-runs 0 or positive")
    if time_budget is not None and not 0 < time_budget < float("inf"):
        raise UsageError(f"--time-budget must be a positive number of minutes, got {time_budget}")
    if not math.isfinite(case_deadline) or case_deadline <= 0:
        raise UsageError(f"--case-deadline must be a positive number of seconds, got {case_deadline}")


def _recoveries(text: str) -> tuple[str, ...]:
    found = tuple(parse_list(text, "--recoveries"))
    unknown = [r for r in found if r not in ("shrink", "respawn")]
    if unknown or not found:
        raise UsageError(f"--recoveries takes shrink and/or respawn, got {text!r}")
    return found


def _sweep_out(kw: dict, first_seed: int, resume: bool):
    """--out as asked; with --resume the folder is meant to hold a record (the sweep checks it)."""
    if not resume:
        return out_request(kw, "sweep", first_seed)
    from mpibench.job.outdir import OutRequest

    return OutRequest(kw.pop("out", None), kw.pop("force", False), "sweep", first_seed)


@click.command()
@click.option("--seeds", type=int, default=10, show_default=True,
              help="seeds; each gives a case per worker count and strategy (--swarm: per worker count)")
@click.option("--workers", default="2,3,5,8", show_default=True, help="worker counts, comma-separated")
@click.option("--strategies", default=None,
              help="strategies, comma-separated [default: every checked strategy, see 'strategies'; "
                   "with --swarm every registered one]")
@click.option("--steps", type=int, default=10, show_default=True, help="training steps per case")
@click.option("--jobs", type=int, default=1, show_default=True, help="launches run at the same time")
@click.option("--swarm", is_flag=True,
              help="each case draws strategy, recovery, bucket bytes, PS shards, batch size, samples and "
                   "check interval from its seed (one case per seed and worker count)")
@click.option("--cases-per-launch", type=int, default=12, show_default=True,
              help="cases run one after another in one mpirun job (1: one job per case)")
@click.option("--time-budget", type=float, default=None, metavar="MINUTES",
              help="keep drawing seeds until this many minutes have passed (--seeds is then ignored)")
@with_options(out_options("sweep.csv, findings.csv, sweep.json and one folder per case"))
@click.option("--mpiexec", default=None, help=MPIEXEC_HELP.format(what="cases"))
@click.option("--first-seed", type=int, default=0, show_default=True, help="seeds run from here")
@click.option("--case-deadline", type=float, default=180.0, show_default=True,
              help="seconds a launch may go without finishing a case before it is killed and "
                   "the case recorded as hung")
@click.option("--shrink-runs", type=int, default=30, show_default=True,
              help="most jobs spent shrinking each violating case (0: no shrinking)")
@click.option("--run-parts", default="", metavar="MODULE:NAME",
              help="every case runs with this run-parts plugin (see 'run --help')")
@click.option("--engine", type=click.Choice(["mpi", "sim"]), default="mpi", show_default=True,
              help="sim: every case simulated in this process (see 'run --engine sim'); each finding is "
                   "then replayed as a real mpirun job and reported as reproduced on MPI or simulation only")
@click.option("--exhaustive", is_flag=True,
              help="with --engine sim: instead of seeds, every kill point, kill pair, straggler drop and "
                   "partition boundary in the first 3 steps of each --workers world (2,3,4 by default)")
@click.option("--replay-on-mpi/--no-replay-on-mpi", default=True, show_default=True,
              help="with --engine sim: replay each finding on real MPI")
@click.option("--recoveries", default="shrink,respawn", show_default=True,
              help="with --exhaustive: every interleaving under each of these recovery policies")
@click.option("--momentum", type=float, default=0.0, show_default=True,
              help="with --exhaustive: every case with optimizer state (run's --momentum); the schedules run "
                   "would refuse are left out and counted in sweep.json")
@click.option("--overlap", is_flag=True,
              help="every case runs with run --overlap (each layer's bucket synchronised during the backward "
                   "pass) [default strategies: those with a nonblocking reduction]")
@click.option("--resume", is_flag=True,
              help="with --engine sim: go on from the record (sweep.csv) an earlier launch of the same plan "
                   "left in --out, running only the cases it lacks (with --time-budget: a long plan in chunks)")
def sweep(seeds, workers, strategies, steps, jobs, mpiexec, first_seed, case_deadline, shrink_runs,
          run_parts, swarm, cases_per_launch, time_budget, engine, exhaustive, replay_on_mpi, recoveries, resume,
          momentum, overlap, **kw):
    """Random fault schedules over seeds x workers x strategies (launches its own jobs).

    Cases of one worker count run many per mpirun job, the world size restored
    between them; each case still writes its own folder, and sweep.csv gets one
    row per case with its violations and the exact 'run' command that replays
    it alone. A job that dies is a finding in the case it died in; the cases it
    had not reached run again in a new job. Exit 0 when every case held every
    invariant, 1 on any finding, 4 when all else passed but the launch could not
    support some cases (not-run, each with what it needs).
    """
    from mpibench.drive.launch import LaunchError, preflight, stop_on_sigterm
    from mpibench.drive.sweep import sweep_command
    from mpibench.job.outdir import OutDirError, resolve
    from mpibench.job.swarm import registered_strategies
    from mpibench.sync.registry import CHECKED, overlapping, validate

    from .options import check_overlap

    _check_sweep_numbers(seeds, steps, jobs, cases_per_launch, first_seed, shrink_runs, time_budget,
                         case_deadline)
    worker_counts = parse_list(workers, "--workers", int)
    if min(worker_counts) < 1:
        raise UsageError("--workers must be positive")
    if strategies is None:
        strategies = ",".join(overlapping() if overlap else registered_strategies() if swarm else CHECKED)
    validate(parse_list(strategies, "--strategies"))
    if overlap:
        check_overlap(parse_list(strategies, "--strategies"))
    if engine == "sim" or exhaustive:
        from mpibench.sim.sweep_entry import SimSweepRequest, sim_sweep_command

        sys.exit(sim_sweep_command(SimSweepRequest(
            seeds, tuple(worker_counts), tuple(parse_list(strategies, "--strategies")), steps, first_seed, swarm,
            exhaustive, engine, run_parts, shrink_runs, case_deadline, time_budget, mpiexec if replay_on_mpi else "",
            _sweep_out(kw, first_seed, resume), _recoveries(recoveries), jobs, resume, momentum, overlap)))
    if resume or momentum:
        raise UsageError(f"{'--resume' if resume else '--momentum'} needs --engine sim"
                         + ("" if resume else " --exhaustive"))
    request = out_request(kw, "sweep", first_seed)
    stop_on_sigterm()  # a scheduler's SIGTERM ends the trial job and the cases, not just this process
    try:
        preflight(mpiexec, max(worker_counts))
    except LaunchError as exc:
        could_not_run(str(exc))
    try:
        out = resolve(request)
    except OutDirError as exc:
        raise UsageError(str(exc)) from None
    extra = (("--run-parts", run_parts) if run_parts else ()) + (("--overlap",) if overlap else ())
    sys.exit(sweep_command(seeds, workers, strategies, steps, jobs, out, mpiexec, first_seed,
                           case_deadline, shrink_runs, extra, swarm, cases_per_launch, time_budget))


@click.command(help=SELFTEST_HELP)  # the self-test's own words, kept with it in mpibench/selftest/
@click.option("--jobs", type=int, default=2, show_default=True, help="jobs run at the same time")
@click.option("--mpiexec", default=None, help=MPIEXEC_HELP.format(what="jobs"))
@click.option("--strategy", default=None,
              help="instead: check this strategy (name or package.module:Class) on uneven shards, "
                   "once without faults and once under each distinct fault the self-test plants "
                   "(8 jobs); exit 0 only if it holds every invariant")
@click.option("--engine", type=click.Choice(["mpi", "sim"]), default="mpi", show_default=True,
              help="sim: every case simulated in this process on a virtual clock, no mpirun (the same "
                   "known-bad reductions and controls, judged by the same rules; one at a time)")
@with_options(out_options("the self-test (one folder per job, the summary in selftest.txt)"))
def selftest(jobs, mpiexec, strategy, engine, **kw):
    from mpibench.drive.launch import LaunchError, launcher_argv, preflight
    from mpibench.selftest.drive import WORKERS, run_selftest
    from mpibench.sync.registry import validate

    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if strategy is not None:
        validate([strategy])
    if engine == "sim" and strategy is not None:
        raise UsageError("--strategy checks a strategy in real MPI jobs; leave out --engine sim")
    request = out_request(kw, "selftest", 0)  # a folder holding results is refused before anything runs
    if engine == "sim":
        sys.exit(_selftest_sim(request))
    try:
        preflight(mpiexec, WORKERS)
    except LaunchError as exc:
        could_not_run(str(exc))
    from mpibench.drive.tee import summary_stream
    from mpibench.job.outdir import OutDirError, resolve

    try:
        out = Path(resolve(request))
    except OutDirError as exc:
        raise UsageError(str(exc)) from None
    with summary_stream(out / "selftest.txt") as stream:
        code = run_selftest(out, launcher_argv(mpiexec), jobs, stream=stream, strategy=strategy)
    sys.exit(code)


def _selftest_sim(request) -> int:
    from mpibench.drive.tee import summary_stream
    from mpibench.job.outdir import OutDirError, resolve
    from mpibench.selftest.sim import selftest_sim_command

    try:
        out = Path(resolve(request))
    except OutDirError as exc:
        raise UsageError(str(exc)) from None
    with summary_stream(out / "selftest.txt") as stream:
        return selftest_sim_command(out, stream)


@click.command()
@click.argument("run_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--platform", default=None, type=click.Path(),
              help="the cluster to predict for: TOML (see mpibench.sim.platform) or a SimGrid XML cluster "
                   "[default: 100 Gb/s, 8 ranks per node, fat tree]")
@click.option("--ranks", default=None, help="comma-separated rank counts [table: 64,512,4096; run: 8 ... 4096]")
@click.option("--sizes", default=None, help="comma-separated bytes, K/M/G suffixes [table: 8,64K,64M; run: "
                                            "the run's gradient and 100M]")
@click.option("--strategies", default=None,
              help=f"table only: comma-separated [{','.join(TABLE_STRATEGIES)}; "
                   f"modelled only: {','.join(MODELLED_ONLY)}]")
@click.option("--placement", type=click.Choice(["block", "cyclic"]), default=None,
              help="ranks onto nodes: block (rank order) or cyclic (dealt round the nodes) [the platform's]")
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="table only: also write the rows to this CSV")
@click.option("--profile", "profile_name", default=None,
              help="instead: a real model's step with DDP-style buckets synchronised during its backward pass "
                   "(resnet50, resnet101, vgg16, bert-large, gpt2, gpt2-medium, llama7b-tp8, or a profile .toml): "
                   "compute, sync, exposed sync and scaling efficiency per strategy at --ranks [8,64,512,4096]")
@click.option("--bucket-policy", type=click.Choice(["ddp", "horovod", "none"]), default="ddp", show_default=True,
              help="with --profile: DDP's buckets (25 MiB, first 1 MiB, reverse order), Horovod's fusion "
                   "(128 MiB, 1 ms cycles), or none (one sync after the backward pass)")
@click.option("--local-batch", type=int, default=32, show_default=True, help="with --profile: samples per rank")
@click.option("--flops-per-s", type=float, default=None,
              help="with --profile: each rank's compute rate [default: this host's float32 matmul rate]")
@click.option("--reduction-compute/--no-reduction-compute", default=True, show_default=True,
              help="table and --profile: charge each algorithm's local reduction (off: the messages alone, "
                   "as SMPI with smpi/simulate-computation:no)")
def predict(run_dir, platform, ranks, sizes, strategies, placement, out, profile_name, bucket_policy, local_batch,
            flops_per_s, reduction_compute):
    """Simulated figures at scale. With RUN_DIR: p = 8 ... 4096 on a platform beside the analytic model,
    and p = 2 simulated beside the run's measured step times (simulated.csv, tagged; then 'report').
    Without: a table of every strategy's all-reduce time for --ranks x --sizes (tagged simulated)."""
    from mpibench.sim.cli_entry import predict_command, predict_profile_command, predict_table_command

    if profile_name is not None:
        if run_dir is not None or sizes:
            raise UsageError("predict --profile takes neither RUN_DIR nor --sizes (the profile's buckets are the sizes)")
        if out and Path(out).exists():
            raise UsageError(f"--out {out} already exists; name a new file")
        sys.exit(predict_profile_command(profile_name, platform, ranks, strategies, bucket_policy, local_batch,
                                         flops_per_s, placement, out, reduction_compute))
    if run_dir is None:
        sys.exit(predict_table_command(platform, ranks, sizes, strategies, placement, out, reduction_compute))
    if strategies or out or not reduction_compute:
        raise UsageError("predict: --strategies, --out and --no-reduction-compute are for the table (no RUN_DIR)")
    sys.exit(predict_command(run_dir, platform, ranks, sizes, placement))
