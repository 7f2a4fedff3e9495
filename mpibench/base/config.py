"""Run configuration: one frozen record of everything that determines a run's rows."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields



class UsageError(Exception):
    """Bad usage or bad input: reported in one line, exit status 2."""


@dataclass(frozen=True)
class RunConfig:
    strategy: str = "native"  # sync.registry.BASELINE (this layer is below the registry; a test holds them equal)
    scenario: str = "none"
    steps: int = 24
    seed: int = 0
    recovery: str = "shrink"
    check_every: int = 1
    device: str = "cpu"
    samples: int = 1200
    features: int = 16
    hidden: int = 32
    classes: int = 4
    batch_size: int = 16
    lr: float = 0.1
    bucket_bytes: int = 1 << 20
    ps_shards: int = 0  # 0: one shard per member
    straggler_deadline: float = 0.0  # 0: wait for stragglers
    deadline_s: float = 30.0
    momentum: float = 0.0  # SGD momentum; 0: plain SGD, no optimizer state
    optimizer: str = "sgd"  # sgd (stateless unless --momentum), adam or adamw (state: m, v, t)
    beta1: float = 0.9  # adam/adamw: decay of the first moment m
    beta2: float = 0.999  # adam/adamw: decay of the second moment v
    adam_eps: float = 1e-8  # adam/adamw: added to sqrt(v_hat) in the denominator
    weight_decay: float = 0.0  # adamw: decoupled (theta -= lr wd theta); adam: wd theta added to the gradient
    # MODULE:NAME of a run-parts plugin (mpibench.job.parts.parts_for); '': the production parts.
    # A field, so that every replay, batch plan and run.json carries it like any other option.
    run_parts: str = ""
    # Each layer's gradient bucket synchronised as the backward pass makes it (mpibench.sync.overlap).
    overlap: bool = False

    def check_values(self) -> None:
        """Everything that can be checked without knowing the world size, so that bad input is
        refused before MPI starts: numbers finite and in range."""
        import math

        if self.seed < 0:
            raise UsageError(f"--seed must be 0 or positive, got {self.seed}")
        for name in ("lr", "straggler_deadline", "deadline_s"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise UsageError(f"--{name.replace('_', '-')} must be a finite number, got {value}")
        if self.lr <= 0:
            raise UsageError(f"--lr must be positive, got {self.lr}")
        if not (math.isfinite(self.momentum) and 0 <= self.momentum < 1):
            raise UsageError(f"--momentum must be at least 0 and below 1, got {self.momentum}")
        self._check_optimizer()
        self._check_counts()

    def _check_optimizer(self) -> None:
        """The optimizer and its settings (part of check_values): each setting only where it applies."""
        import math

        if self.optimizer not in OPTIMIZERS:
            raise UsageError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}")
        for name in ("beta1", "beta2"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value < 1):
                raise UsageError(f"--{name} must be at least 0 and below 1, got {value}")
        if not (math.isfinite(self.adam_eps) and self.adam_eps > 0):
            raise UsageError(f"--adam-eps must be a positive finite number, got {self.adam_eps}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise UsageError(f"--weight-decay must be 0 or a positive finite number, got {self.weight_decay}")
        if self.optimizer == "sgd":
            for name in ADAM_SETTINGS:
                if getattr(self, name) != getattr(RunConfig, name):
                    raise UsageError(f"--{name.replace('_', '-')} needs --optimizer adam or adamw "
                                     "(sgd takes --momentum only)")
        elif self.momentum:
            raise UsageError(f"--momentum is SGD's: --optimizer {self.optimizer} keeps its own first moment "
                             "(--beta1)")

    def _check_counts(self) -> None:
        """Counts, sizes and deadlines in range (part of check_values)."""
        if self.steps < 1:
            raise UsageError(f"--steps must be at least 1, got {self.steps}")
        if self.check_every < 1:
            raise UsageError(f"--check-every must be at least 1, got {self.check_every}")
        if self.recovery not in ("shrink", "respawn"):
            raise UsageError(f"--recovery must be shrink or respawn, got {self.recovery!r}")
        if self.batch_size < 1:
            raise UsageError(f"--batch-size must be at least 1, got {self.batch_size}")
        if min(self.features, self.hidden, self.classes) < 1 or self.classes < 2:
            raise UsageError("model sizes must be positive and classes at least 2")
        if self.bucket_bytes < 4:
            raise UsageError(f"--bucket-bytes must hold at least one float32 (4 bytes), got {self.bucket_bytes}")
        if self.ps_shards < 0:
            raise UsageError(f"--ps-shards must be 0 (one per member) or positive, got {self.ps_shards}")
        if self.straggler_deadline < 0 or self.deadline_s <= 0:
            raise UsageError("deadlines must be positive")
        if self.deadline_s < MIN_DEADLINE_S:
            raise UsageError(f"--deadline-s must be at least {MIN_DEADLINE_S:g} s (every MPI wait of a step "
                             f"gets this long; shorter ones end healthy runs as stuck), got {self.deadline_s:g}")

    def validate(self, world_size: int) -> None:
        self.check_values()
        if self.samples < world_size:
            raise UsageError(f"--samples {self.samples} cannot give each of {world_size} workers a shard")

    def as_dict(self) -> dict:
        return asdict(self)

    def cli_args(self) -> list[str]:
        """The ``run`` options that reproduce this config (defaults left out)."""
        default = RunConfig()
        args = ["--strategy", self.strategy, "--scenario", self.scenario,
                "--steps", str(self.steps), "--seed", str(self.seed)]
        shown = {"strategy", "scenario", "steps", "seed"}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name not in shown and value != getattr(default, f.name):
                flag = "--" + f.name.replace("_", "-")
                args += [flag] if value is True else [flag, str(value)]  # a flag stands alone
        return args


OPTIMIZERS = ("sgd", "adam", "adamw")
ADAM_SETTINGS = ("beta1", "beta2", "adam_eps", "weight_decay")  # what --optimizer adam and adamw take


def has_optimizer_state(config) -> bool:
    """Whether the run's optimizer keeps state between steps (momentum above 0, adam, adamw)."""
    return getattr(config, "optimizer", "sgd") != "sgd" or bool(config.momentum)


# The shortest --deadline-s accepted: below it, waits that a healthy step needs time out.
MIN_DEADLINE_S = 0.1


def launcher() -> str:
    """How jobs are launched: ``MPIBENCH_MPIEXEC``, else plain ``mpirun``."""
    return os.environ.get("MPIBENCH_MPIEXEC", "").strip() or "mpirun"


def launcher_argv() -> list[str]:
    """The launcher a driver uses, as an argument list (absolute program, its flags)."""
    from .launch_command import driver_launch

    return list(driver_launch().launcher)


def replay_command(config: RunConfig, ranks: int, out_dir: str | None = None, launch=None) -> str:
    """The ``run`` command that replays ``config``, launched as this run was
    (:mod:`.launch_command`: launcher with its flags, interpreter, numeric environment).
    ``launch``: (Launch, extra arguments) recorded by the run (older run.json files), for a
    command formed offline. Without ``out_dir`` every replay writes a fresh folder under
    ``./mpibench-out/`` (so running it twice needs no ``--force``)."""
    from .launch_command import command_text, this_launch

    how, extra = launch if launch is not None else (this_launch(), [])
    args = ["run", *config.cli_args(), *extra]
    if out_dir:
        args += ["--out", out_dir]
    return command_text(how, ranks, args)
