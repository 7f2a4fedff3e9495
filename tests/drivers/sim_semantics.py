"""Small simulated worlds that pin down the ULFM semantics mpibench relies on (see test_sim_world)."""
import json
import os
import signal
import sys

import numpy as np

from mpibench.sim.process import run_world
from mpibench.sim.world import Options

out = {}


def world(ranks, body, **kw):
    got = {}

    def wrapped():
        from mpi4py import MPI
        got[MPI.COMM_WORLD.Get_rank()] = body(MPI, MPI.COMM_WORLD)
        return 0
    result = run_world(ranks, wrapped, **kw)
    return got, result


def ring(MPI, comm):
    r, p = comm.Get_rank(), comm.Get_size()
    send, recv = np.full(4, r, np.float32), np.zeros(4, np.float32)
    reqs = [comm.Irecv(recv, (r - 1) % p, 5), comm.Isend(send, (r + 1) % p, 5)]
    while not MPI.Request.Testall(reqs):
        pass
    return float(recv[0])


def dead_peer(MPI, comm):
    if comm.Get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    buf = np.zeros(1)
    try:
        comm.Recv(buf, source=1)
        return "received"
    except MPI.Exception as exc:
        return exc.Get_error_class()


def revoked(MPI, comm):
    if comm.Get_rank() == 0:
        comm.Revoke()
        return "revoker"
    buf = np.zeros(1)
    try:
        comm.Recv(buf, source=0)  # never sent: only the revoke releases it
        return "received"
    except MPI.Exception as exc:
        return exc.Get_error_class()


def agree_shrink(MPI, comm):
    if comm.Get_rank() == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    first = None
    try:
        comm.Agree(1)
    except MPI.Exception as exc:
        first = exc.Get_error_class()
    comm.Ack_failed()
    flag = comm.Agree(1 if comm.Get_rank() else 0)
    small = comm.Shrink()
    return [first, flag, small.Get_size(), small.allgather(comm.Get_rank())]


def stuck(MPI, comm):
    if comm.Get_rank() == 0:
        comm.Barrier()  # the other never comes: a simulated hang, detected, not waited for
    return "left"


def spawned(MPI, comm):
    inter = comm.Spawn(sys.executable, args=[], maxprocs=1)
    merged = inter.Merge(high=False)
    return merged.allgather(os.getpid())


def refused(MPI, comm):
    try:
        comm.Spawn(sys.executable, args=[], maxprocs=1)
        return "spawned"
    except MPI.Exception as exc:
        return exc.Get_error_class()


def lost(MPI, comm, apart):
    merged = comm.Spawn(sys.executable, args=[], maxprocs=1).Merge(high=False)
    if apart and comm.Get_rank() == 1:
        import time
        time.sleep(1.0)  # the launched job's last process dies alone, a second after the first
    os.kill(os.getpid(), signal.SIGKILL)


def lost_child():
    from mpi4py import MPI
    merged = MPI.Comm.Get_parent().Merge(high=True)
    try:
        merged.Agree(1)
        return 0
    except MPI.Exception:
        return 7  # told of the failure


def overlap(MPI, comm):
    """Rank 0 receives into buf[1:3], then sends buf[0:2] (overlapping) while rank 1's message
    is already there: the send must carry rank 0's own buf[1], as a real library's does."""
    import time
    r = comm.Get_rank()
    buf = np.array([10 * r, 10 * r + 1, 10 * r + 2], np.float32)
    if r == 1:
        got = np.zeros(2, np.float32)
        reqs = [comm.Isend(buf[0:2], 0, 3), comm.Irecv(got, 0, 3)]
        MPI.Request.Waitall(reqs)
        return got.tolist()
    time.sleep(1e-3)  # rank 1's message has arrived before rank 0 posts anything
    reqs = [comm.Irecv(buf[1:3], 1, 3), comm.Isend(buf[0:2], 1, 3)]
    MPI.Request.Waitall(reqs)
    return buf.tolist()


def revoke_then_landing(MPI, comm, polled):
    """Rank 0 revokes at 1 ms (everyone sees it alpha later) while rank 1 waits on two
    receives, so it learns of the revoke while they are open; rank 2 then sends
    8 bytes and 4 KiB, before the revoke takes effect, both landing after it, the first one
    first. Polling (Testall) must end as the blocking Waitall does, and never spin at the
    instant the first lands."""
    import time
    from mpibench.sim.network import Network
    r = comm.Get_rank()
    if r == 0:
        time.sleep(1e-3)
        comm.Revoke()
        return "revoker"
    buf = np.zeros(512)  # eager: a send before the revoke is delivered
    if r == 2:
        time.sleep(1e-3 + Network().alpha_s / 2)
        try:
            MPI.Request.Waitall([comm.Isend(np.full(1, 2.0), 1, 8), comm.Isend(buf + 1.0, 1, 9)])
        except MPI.Exception as exc:
            return exc.Get_error_class()
        return "sent"
    small = np.zeros(1)
    reqs = [comm.Irecv(small, 2, 8), comm.Irecv(buf, 2, 9)]
    try:
        if polled:
            while not MPI.Request.Testall(reqs):
                pass
        else:
            MPI.Request.Waitall(reqs)
    except MPI.Exception as exc:
        return exc.Get_error_class()
    return [float(small[0]), float(buf[0])]


def spin(MPI, comm):
    while comm.Get_rank() == 0:  # never blocks: only the wall bound ends it
        pass
    comm.Barrier()


def child():
    from mpi4py import MPI
    merged = MPI.Comm.Get_parent().Merge(high=True)
    merged.allgather(os.getpid())
    return 0


got, res = world(3, ring)
out["ring"] = got
got, res = world(2, overlap)
out["overlap"] = got
got, res = world(2, dead_peer)
out["dead_peer"], out["dead_peer_codes"] = got, res.codes
got, res = world(2, revoked)
out["revoked"] = got
got, res = world(3, agree_shrink)
out["agree_shrink"] = got
got, res = world(2, stuck)
out["stuck"], out["stuck_deadlocked"] = got, res.deadlocked
got, res = world(2, spawned, spawn_body=child)
out["spawned"], out["spawned_count"] = got, res.spawned
got, res = world(2, refused, spawn_body=child, options=Options(spawn_slots=0))
out["spawn_refused"] = got
for apart in (False, True):
    res = run_world(2, lambda apart=apart: lost(__import__("mpi4py").MPI, __import__("mpi4py").MPI.COMM_WORLD, apart),
                    spawn_body=lost_child)
    out[f"lost_apart_{apart}"] = {"codes": res.codes, "deadlocked": res.deadlocked}
for polled in (True, False):
    got, res = world(3, lambda MPI, comm, polled=polled: revoke_then_landing(MPI, comm, polled), wall_limit_s=30)
    out[f"revoke_landing_{'polled' if polled else 'waited'}"] = {"got": got, "over": res.over_wall_limit}
got, res = world(2, spin, wall_limit_s=1.0)
out["spin"] = {"got": got, "over": res.over_wall_limit, "deadlocked": res.deadlocked, "codes": res.codes}
times = [world(3, ring)[1].virtual_s for _ in range(2)]
out["virtual_times"] = times
print("RESULT " + json.dumps(out, default=str))
