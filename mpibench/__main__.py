from .base.orphan_guard import guard_if_launched
from .mpi_noise import install

install()  # before mpi4py starts MPI: the filter process is not forked from inside MPI
guard_if_launched()  # a rank whose launcher was killed ends instead of waiting forever

from .cli import main  # noqa: E402

main(prog_name="python -m mpibench")
