"""Peak parameter, gradient and optimizer-state bytes per rank, as held by a real run.

Under ``mpirun`` (``python -m mpibench.job.shardmem STRATEGY MOMENTUM STEPS``, as
``lab/studies/sharded_memory.py`` launches it): every rank builds the ordinary
trainer for ``STRATEGY`` on a model large enough for the arrays to dominate,
trains ``STEPS`` steps with ``tracemalloc`` on, and reads off what it holds:
the parameter vector, every gradient buffer (the model's gradient sums and
every array the strategy reaches: step buffer, scratch, prepared rounds), the
optimizer state, what the traced allocations hold after the steps and their
peak during them (activations, temporaries and the trainer's rollback copies
included), both over the traced memory before the trainer existed.
Rank 0 prints one JSON line per rank (``SHARDMEM {...}``). Nothing is computed
from a formula: every figure is the size of an array the run allocated.
"""
from __future__ import annotations

import json
import sys
import tracemalloc

import numpy as np

FEATURES, HIDDEN, CLASSES = 256, 512, 10  # 136,714 parameters: arrays, not overhead, dominate


def _owned_arrays(obj, skip: tuple, found: dict, depth: int = 0) -> dict:
    """Every array ``obj`` reaches through its attributes, lists, tuples and dicts, each counted
    once by the memory it views (``skip``: objects not to walk into, such as the communicator)."""
    if depth > 6 or any(obj is s for s in skip):
        return found
    if isinstance(obj, np.ndarray):
        root = obj
        while isinstance(root.base, np.ndarray):
            root = root.base
        found[id(root)] = root
        return found
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = list(vars(obj).values())
    else:
        return found
    for item in items:
        _owned_arrays(item, skip, found, depth + 1)
    return found


def measure(strategy: str, momentum: float, steps: int) -> dict:
    from mpi4py import MPI

    from mpibench.base.config import RunConfig
    from mpibench.base.records import RunRecords
    from mpibench.engine.data import make_dataset, make_shards
    from mpibench.engine.worker import Trainer
    from mpibench.kernels import select_backend
    from mpibench.sync.comm import Comm

    world = MPI.COMM_WORLD
    config = RunConfig(strategy=strategy, steps=steps, momentum=momentum, features=FEATURES, hidden=HIDDEN,
                       classes=CLASSES, samples=64 * world.Get_size(), batch_size=16)
    dataset = make_dataset(config.seed, config.samples, config.features, config.classes)
    shards = make_shards(config.seed, config.samples, world.Get_size())
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    trainer = Trainer(config, Comm(world), select_backend("cpu"), dataset, shards, RunRecords(None),
                      world.Get_size())
    tracemalloc.reset_peak()
    trainer.run()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    reached = _owned_arrays(trainer.strategy, (trainer.strategy.comm, trainer.strategy.backend), {})
    reached.pop(id(trainer.params), None)  # the parameters are counted once, as parameters
    gradient = trainer.model.grad_sum.nbytes + sum(a.nbytes for a in reached.values())
    state = trainer.optimizer.nbytes() if trainer.optimizer is not None else 0
    return {"rank": world.Get_rank(), "ranks": world.Get_size(), "strategy": strategy, "momentum": momentum,
            "n_params": int(len(trainer.params)), "params_bytes": int(trainer.params.nbytes),
            "gradient_bytes": int(gradient), "optimizer_state_bytes": int(state),
            "traced_held_bytes": int(held - before), "traced_peak_bytes": int(peak - before)}


def main(argv: list[str]) -> int:
    from mpi4py import MPI

    strategy, momentum, steps = argv[0], float(argv[1]), int(argv[2])
    rows = MPI.COMM_WORLD.gather(measure(strategy, momentum, steps), root=0)
    if MPI.COMM_WORLD.Get_rank() == 0:
        for row in rows:
            print("SHARDMEM " + json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
