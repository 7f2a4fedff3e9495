"""The MPI semantics mpibench relies on, as one program for either library (see test_sim_twin_semantics).

``python twin_semantics.py GROUP`` under ``mpirun -n 3`` (``spawn``: ``-n 2``) runs it on the
real library; ``python twin_semantics.py --sim GROUP`` runs the same functions on the same number
of simulated processes. Every rank prints ``RANK r {json}``: what it saw. The test holds what
Open MPI 5.0.11 with ULFM gave on this machine and asks both libraries for it.

Groups: ``order`` (non-overtaking, matching order, a send buffer is the library's until the
send completes, broadcast from a non-zero root, reductions, gathers, revoke on a copy),
``failure`` (rank 2 is SIGKILLed: sends and receives to it, Testall and Waitall error classes,
probes, agree before and after acknowledging, shrink), ``spawn`` (Spawn, then Merge).
"""
import json
import os
import signal
import sys
import time

import numpy as np

BIG = 1 << 15  # float64 elements: 256 KiB, over any eager limit
SIMULATED = "--sim" in sys.argv


def caught(MPI, fn):
    try:
        value = fn()
        return ["ok", value if isinstance(value, (bool, int, float, list)) or value is None else str(value)]
    except MPI.Exception as exc:
        return exc.Get_error_class()


def order(MPI, comm):
    r, seen = comm.Get_rank(), {}
    if r == 0:
        big, small = np.ones(BIG), np.full(4, 2.0)
        reqs = [comm.Isend(big, 1, 1), comm.Isend(small, 1, 2)]  # the large one first
        for v in (0.0, 1.0, 2.0):
            comm.Send(np.full(1, v), 2, 5)
        comm.Send(np.full(1, 9.0), 2, 6)
        own = np.full(4, 1.0)
        comm.Isend(own, 1, 8).Wait()
        own[:] = 7.0  # the first send has completed: the buffer is the caller's again
        comm.Isend(own, 1, 9).Wait()
        MPI.Request.Waitall(reqs)
    elif r == 1:
        status = MPI.Status()
        while not comm.Iprobe(0, MPI.ANY_TAG, status):
            time.sleep(1e-5)
        seen["first_probed_tag"] = status.Get_tag()  # the earlier send, whatever arrived first
        big, small = np.zeros(BIG), np.zeros(4)
        comm.Recv(big, 0, MPI.ANY_TAG)
        comm.Recv(small, 0, MPI.ANY_TAG)
        seen["any_tag_order"] = [float(big[0]), float(small[0]), float(big[-1])]
        first, second = np.zeros(4), np.zeros(4)
        comm.Recv(first, 0, 8)
        comm.Recv(second, 0, 9)
        seen["reused_buffer"] = [float(first[0]), float(second[0])]
    else:
        bufs = [np.zeros(1) for _ in range(4)]
        reqs = [comm.Irecv(bufs[i], 0, 5) for i in range(3)] + [comm.Irecv(bufs[3], 0, MPI.ANY_TAG)]
        MPI.Request.Waitall(reqs)
        seen["matching_order"] = [float(b[0]) for b in bufs]
    data = np.full(3, 10.0 * r)
    comm.Bcast(data, root=1)
    seen["bcast_root1"] = data.tolist()
    seen["bcast_obj_root2"] = comm.bcast({"from": r}, root=2)
    total, high = np.zeros(1), np.zeros(1)
    comm.Allreduce(np.full(1, r + 1.0), total, op=MPI.SUM)
    comm.Allreduce(np.full(1, r + 1.0), high, op=MPI.MAX)
    seen["allreduce_sum_max"] = [float(total[0]), float(high[0])]
    every = np.zeros(3)
    comm.Allgather(np.full(1, float(r)), every)
    seen["allgather"] = every.tolist() + comm.allgather(r)
    copy = comm.Dup()
    copy.Set_errhandler(MPI.ERRORS_RETURN)
    copy.Barrier()
    if r == 0:
        copy.Revoke()
        seen["revoked_recv"] = "revoker"
    else:
        seen["revoked_recv"] = caught(MPI, lambda: copy.Recv(np.zeros(1), 0, 4))
    seen["agree_on_revoked"] = caught(MPI, lambda: copy.Agree(1))
    seen["shrink_of_revoked"] = copy.Shrink().Get_size()
    return seen


def failure(MPI, comm):
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    r, seen = comm.Get_rank(), {}
    if r == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    if r == 1:
        comm.Send(np.full(1, 5.0), 0, 3)
    time.sleep(1.0)  # the death is noticed by now
    if r == 0:
        seen["small_isend_to_dead"] = caught(MPI, lambda: comm.Isend(np.zeros(8, np.uint8), 2, 1).Wait())
        seen["large_isend_to_dead"] = caught(MPI, lambda: comm.Isend(np.zeros(BIG), 2, 1).Wait())
        seen["blocking_send_to_dead"] = caught(MPI, lambda: comm.Send(np.zeros(8, np.uint8), 2, 1))
        seen["recv_from_dead"] = caught(MPI, lambda: comm.Recv(np.zeros(1), 2, 1))
        seen["probe_dead"] = caught(MPI, lambda: comm.Iprobe(2, 1))
        seen["probe_any_source"] = caught(MPI, lambda: comm.Iprobe(MPI.ANY_SOURCE, 77))
        dead = [comm.Irecv(np.zeros(1), 2, 2)]

        def testall():
            while not MPI.Request.Testall(dead):
                time.sleep(1e-3)
        seen["testall_with_dead"] = caught(MPI, testall)
        reqs, statuses = [comm.Irecv(np.zeros(1), 1, 3), comm.Irecv(np.zeros(1), 2, 3)], [MPI.Status(), MPI.Status()]
        seen["waitall_with_dead"] = [caught(MPI, lambda: MPI.Request.Waitall(reqs, statuses)),
                                     [s.Get_error() for s in statuses]]
    seen["agree_before_ack"] = caught(MPI, lambda: comm.Agree(1))
    comm.Ack_failed()
    seen["failed_group"] = comm.Get_failed().Get_size()
    seen["agree_after_ack"] = caught(MPI, lambda: comm.Agree(1 if r == 0 else 0))
    seen["agree_all_one"] = caught(MPI, lambda: comm.Agree(1))
    small = comm.Shrink()
    seen["shrunk"] = [small.Get_size(), small.allgather(r)]
    return seen


def spawn(MPI, comm):
    inter = comm.Spawn(sys.executable, args=[os.path.abspath(__file__), "child"], maxprocs=1)
    merged = inter.Merge(high=False)
    return {"merged": [merged.Get_size(), merged.allgather(comm.Get_rank())]}


def child():
    from mpi4py import MPI
    merged = MPI.Comm.Get_parent().Merge(high=True)
    merged.allgather("child")
    return 0


GROUPS = {"order": (order, 3), "failure": (failure, 3), "spawn": (spawn, 2)}


def report(MPI, fn):
    comm = MPI.COMM_WORLD
    seen = fn(MPI, comm)
    print(f"RANK {comm.Get_rank()} {json.dumps(seen)}", flush=True)
    return 0


def main():
    group = [a for a in sys.argv[1:] if not a.startswith("--")][0]
    if group == "child":
        return child()
    fn, ranks = GROUPS[group]
    if SIMULATED:
        from mpibench.sim.process import run_world

        result = run_world(ranks, lambda: report(__import__("mpi4py").MPI, fn), spawn_body=child)
        print(f"CODES {json.dumps(result.codes)} DEADLOCKED {json.dumps(result.deadlocked)}", flush=True)
        return 0
    from mpi4py import MPI
    return report(MPI, fn)


if __name__ == "__main__":
    sys.exit(main())
