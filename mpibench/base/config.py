"""Run configuration: one frozen record of everything that determines a run's rows."""
from __future__ import annotations

import os
import shlex
from dataclasses import asdict, dataclass, fields

from .launchflags import OPEN_MPI_FLAGS  # the embedded Open MPI's flags (the Makefile's MPIRUN_FLAGS)


class UsageError(Exception):
    """Bad usage or bad input: reported in one line, exit status 2."""


@dataclass(frozen=True)
class RunConfig:
    strategy: str = "native"
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

    def check_values(self) -> None:
        """What can be checked without knowing the world size: numbers finite and in range."""
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

    def validate(self, world_size: int) -> None:
        self.check_values()
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
        if self.samples < world_size:
            raise UsageError(f"--samples {self.samples} cannot give each of {world_size} workers a shard")
        if self.bucket_bytes < 4:
            raise UsageError(f"--bucket-bytes must hold at least one float32 (4 bytes), got {self.bucket_bytes}")
        if self.ps_shards < 0:
            raise UsageError(f"--ps-shards must be 0 (one per member) or positive, got {self.ps_shards}")
        if self.straggler_deadline < 0 or self.deadline_s <= 0:
            raise UsageError("deadlines must be positive")
        if self.deadline_s < MIN_DEADLINE_S:
            raise UsageError(f"--deadline-s must be at least {MIN_DEADLINE_S:g} s (every MPI wait of a step "
                             f"gets this long; shorter ones end healthy runs as stuck), got {self.deadline_s:g}")

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
                args += ["--" + f.name.replace("_", "-"), str(value)]
        return args


# The shortest --deadline-s accepted: below it, waits that a healthy step needs time out.
MIN_DEADLINE_S = 0.1


def launcher() -> str:
    """How jobs are launched: ``MPIBENCH_MPIEXEC``, else plain ``mpirun``."""
    return os.environ.get("MPIBENCH_MPIEXEC", "").strip() or "mpirun"


def launcher_argv() -> list[str]:
    """The launcher with an absolute program path, so a printed command runs as pasted from
    any folder and without the virtual environment on PATH: ``MPIBENCH_MPIEXEC`` (a bare name
    found beside this Python or on PATH), else this Python's own ``mpirun`` with the flags the
    embedded Open MPI needs, else ``mpirun`` from PATH."""
    import shutil
    import sys

    given = os.environ.get("MPIBENCH_MPIEXEC", "").strip()
    beside = os.path.join(os.path.dirname(sys.executable), "mpirun")
    if not given:
        return [beside, *OPEN_MPI_FLAGS] if os.access(beside, os.X_OK) else [shutil.which("mpirun") or "mpirun"]
    argv = shlex.split(given)
    if argv and os.sep not in argv[0]:
        near = os.path.join(os.path.dirname(sys.executable), argv[0])
        argv[0] = near if os.access(near, os.X_OK) else shutil.which(argv[0]) or argv[0]
    return argv


def replay_command(config: RunConfig, ranks: int, out_dir: str | None = None) -> str:
    """The ``run`` command that replays ``config``: the numeric environment it ran with
    (:mod:`.numeric_env`), absolute launcher and interpreter. Without
    ``out_dir`` every replay writes a fresh folder under ``./mpibench-out/`` (so running it
    twice needs no ``--force``)."""
    import sys

    from .numeric_env import env_prefix

    parts = env_prefix() + launcher_argv() + ["-n", str(ranks), sys.executable, "-m", "mpibench", "run"]
    parts += config.cli_args()
    if out_dir:
        parts += ["--out", out_dir]
    return shlex.join(parts)
