"""Under mpirun: the given ranks meet a deadline no recovery absorbs (PeerLate escapes the job
body) while the others wait in a barrier; the job must end with one ``stuck:`` line, exit 1."""
import sys

from mpi4py import MPI

from mpibench.cli.usage import guarded
from mpibench.sync.comm import PeerLate


def body() -> int:
    late = {int(r) for r in sys.argv[1].split(",")}
    if MPI.COMM_WORLD.Get_rank() in late:
        raise PeerLate("no answer within 0.5 s", [0])
    MPI.COMM_WORLD.Barrier()  # never completes: the late ranks' abort ends these
    return 0


sys.exit(guarded(body))
