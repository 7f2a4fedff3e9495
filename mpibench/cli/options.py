"""The options ``run`` and the main job share, ``--out``/``--force``, and how they become a config."""
from __future__ import annotations

import os

import click

from mpibench.base.config import OPTIMIZERS, RunConfig, UsageError
from mpibench.base.parsing import parse_size

DEVICES = ["cpu", "gpu", "auto", "emulated"]


def run_options(func):
    """Options shared by ``run`` and the main job."""
    d = RunConfig()
    opts = [
        click.option("--steps", type=int, default=d.steps, show_default=True, help="training steps per run"),
        click.option("--seed", type=int, default=d.seed, show_default=True,
                     help="root seed: data, shards, epoch orders, weights and fault schedules derive from it"),
        click.option("--recovery", type=click.Choice(["shrink", "respawn"]), default=d.recovery,
                     show_default=True, help="after a killed rank: continue smaller, or spawn a replacement"),
        click.option("--check-every", type=int, default=d.check_every, show_default=True,
                     help="check the six invariants every K steps"),
        click.option("--device", type=click.Choice(DEVICES), default=d.device,
                     show_default=True, help="where gradient buffers live and are reduced (emulated: "
                     "the GPU code path on host memory, every implicit host/device crossing an error)"),
        click.option("--samples", type=int, default=d.samples, show_default=True, help="data set size"),
        click.option("--features", type=int, default=d.features, show_default=True, help="input features"),
        click.option("--hidden", type=int, default=d.hidden, show_default=True, help="hidden units of the MLP"),
        click.option("--classes", type=int, default=d.classes, show_default=True, help="output classes"),
        click.option("--batch-size", type=int, default=d.batch_size, show_default=True,
                     help="local batch size per worker (epochs end on a shorter batch)"),
        click.option("--lr", type=float, default=d.lr, show_default=True, help="SGD learning rate"),
        click.option("--momentum", type=float, default=d.momentum, show_default=True,
                     help="SGD momentum (0: plain SGD; above 0 the optimizer keeps state, cut as a sharded "
                          "strategy cuts the step)"),
        click.option("--optimizer", type=click.Choice(list(OPTIMIZERS)), default=d.optimizer, show_default=True,
                     help="sgd (with --momentum), adam or adamw: these keep m, v and a step count as state"),
        click.option("--beta1", type=float, default=d.beta1, show_default=True, help="adam/adamw: first-moment decay"),
        click.option("--beta2", type=float, default=d.beta2, show_default=True, help="adam/adamw: second-moment decay"),
        click.option("--adam-eps", type=float, default=d.adam_eps, show_default=True,
                     help="adam/adamw: added to sqrt(v_hat)"),
        click.option("--weight-decay", type=float, default=d.weight_decay, show_default=True,
                     help="adamw: decoupled, theta -= lr*wd*theta; adam: wd*theta added to the gradient"),
        click.option("--bucket-bytes", default=str(d.bucket_bytes), show_default=True,
                     help="ring all-reduce bucket cap (4K, 1M, ...)"),
        click.option("--ps-shards", type=int, default=d.ps_shards, show_default=True,
                     help="parameter-server shards (0: one per member)"),
        click.option("--straggler-deadline", type=float, default=d.straggler_deadline, show_default=True,
                     help="seconds to wait for a late worker before dropping it from the step (0: wait)"),
        click.option("--deadline-s", type=float, default=d.deadline_s, show_default=True,
                     help="longest wait for any message before the run is declared stuck"),
        click.option("--overlap", is_flag=True, default=False,
                     help="start each layer's gradient bucket (at most --bucket-bytes) as the backward "
                          "pass makes it, every one waited for before the update (strategies with a "
                          "nonblocking reduction: see 'strategies')"),
        *out_options("CSVs, run.json and report.html"),
    ]
    return with_options(opts)(func)


def engine_options(func):
    """``--engine mpi|sim`` and what the simulated engine needs (see mpibench.sim)."""
    opts = [
        click.option("--engine", type=click.Choice(["mpi", "sim"]), default="mpi", show_default=True,
                     help="mpi: this process is one rank of an mpirun job; sim: every rank simulated in "
                          "this process on a virtual clock (no mpirun; figures tagged 'simulated')"),
        click.option("--ranks", type=int, default=4, show_default=True,
                     help="--engine sim: how many ranks to simulate"),
        click.option("--platform", default=None, type=click.Path(),
                     help="--engine sim: the simulated cluster (TOML platform file, run.json or "
                          "calibration JSON) [default: this host's figures]"),
    ]
    return with_options(opts)(func)


def out_options(what: str) -> list:
    """``--out`` and ``--force``: see :mod:`mpibench.job.outdir` for the policy."""
    return [
        click.option("--out", type=click.Path(file_okay=False), default=None,
                     help=f"output folder for {what} [default: a fresh "
                          "mpibench-out/<UTC time>-<kind>-seed<S>/, linked as mpibench-out/latest]; "
                          "a folder that already holds results is refused unless --force"),
        click.option("--force", is_flag=True, default=False,
                     help="let --out replace the results a folder already holds (they are removed first)"),
    ]


def with_options(options):
    """Apply a list of click options (shared between commands) to a command."""
    def apply(func):
        for opt in reversed(options):
            func = opt(func)
        return func
    return apply


def out_request(kw: dict, kind: str, seed: int):
    """The validated output request; refuses a folder that holds results (exit 2) before any write."""
    from mpibench.job.outdir import OutDirError, OutRequest

    request = OutRequest(kw.pop("out", None), kw.pop("force", False), kind, seed)
    try:
        request.check()
    except OutDirError as exc:
        raise UsageError(str(exc)) from None
    return request


def shared_out(request) -> str:
    """The request resolved once for the whole job (rank 0 creates the folder, the others learn it)."""
    from mpi4py import MPI

    from mpibench.job.outdir import resolve_on

    return resolve_on(MPI.COMM_WORLD, request, UsageError)[0]


def config_from(strategy: str, scenario: str, **kw) -> RunConfig:
    """The checked run config from the parsed ``run_options`` (``--out``/``--force`` dropped)."""
    kw["bucket_bytes"] = parse_size(str(kw["bucket_bytes"]))
    kw.pop("out", None)
    kw.pop("force", None)
    if scenario.endswith(".toml"):  # a schedule file: named so that every replay finds it from any folder
        scenario = os.path.abspath(scenario)
    config = RunConfig(strategy=strategy, scenario=scenario, **kw)
    config.check_values()
    check_names(config)
    return config


def modelled_only() -> tuple[str, ...]:
    """The names predict models that no sync class runs."""
    from mpibench.sim.rounds import MODELLED_ONLY

    return MODELLED_ONLY


def check_names(config: RunConfig) -> None:
    """The strategy and the scenario exist (UsageError otherwise): refused before MPI starts,
    where the world size is not yet known for the rest of the checks (job.runner.prepare)."""
    from mpibench.faults import check_name
    from mpibench.sync import registry

    if config.strategy in modelled_only():
        raise UsageError(f"--strategy {config.strategy} is modelled only, not a strategy that runs "
                         f"(predict --strategies {config.strategy})")
    registry.validate([config.strategy])
    if config.overlap:
        check_overlap([config.strategy])
    try:
        check_name(config.scenario)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_overlap(strategies) -> None:
    """``--overlap`` with each of ``strategies`` (UsageError, one line, for one that cannot)."""
    from mpibench.sync import registry
    from mpibench.sync.overlap import refusal

    for name in strategies:
        why = refusal(registry.lookup(name))
        if why:
            raise UsageError(why)
