from .mpi_noise import install

install()  # before mpi4py starts MPI: the filter process is not forked from inside MPI

from .cli import main  # noqa: E402

main(prog_name="python -m mpibench")
