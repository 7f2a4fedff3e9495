"""Collective microbenchmarks: every candidate timed, checked and modelled, size by size.

The harness owns warm-up, timing, result checking and output; a strategy only
reduces (the nccl-tests split). Modules, top down: :mod:`.command` (the CLI
command and the main job's section), :mod:`.run` (one plan on one
communicator), :mod:`.plan` (options and their checks), :mod:`.candidates`
(blocking baseline, C floor, strategies), :mod:`.rounds` (interleaved timing),
:mod:`.rows` (``bench.csv`` rows and printed lines), :mod:`.model` (the model's
rows), :mod:`.inputs` (inputs with a known exact sum), :mod:`.cfloor` (the C
loop's build, and of ``c_anchor.c``, the stand-alone program), :mod:`.anchor`
(an IMB or OSU binary run as its own job in the rounds), :mod:`.floor` (the
data-movement floor, no MPI).
"""
from .inputs import Expected
from .plan import BenchPlan, DEFAULT_SIZES, split_names, sweep_sizes, validate
from .rows import bench_row, human_bytes, progress_line


def __getattr__(name: str):
    """The command and the main job's section load on first use: they start MPI, and bad
    options are refused before it starts (cli.job_commands.bench)."""
    if name in ("bench_command", "main_job_bench"):
        from . import command

        return getattr(command, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BenchPlan", "DEFAULT_SIZES", "Expected", "bench_command", "bench_row", "human_bytes",
           "main_job_bench", "progress_line", "split_names", "sweep_sizes", "validate"]
