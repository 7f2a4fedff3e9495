"""Known-harmless Open MPI lines kept off a rank's standard error, nothing else.

When a peer dies or a communicator is revoked, Open MPI's non-blocking collectives
(libnbc, behind the deadline communicator's Iallreduce, Iallgather and Ibcast) print
``NBC_Progress: an error 75|77 was found during schedule 0x... - aborting the schedule``
and a blank line, unconditionally, although the call then returns the error to mpibench,
which recovers from it (75: a process failed, 77: the communicator was revoked); when
such a failure meets the start of a schedule's next round it prints
``Error in NBC_Start_round() (-1)`` instead (the round's start reports the generic error,
not the fault-tolerance code: Open MPI pull request 14353), and the call again returns
the error to mpibench; and the
libevent inside Open MPI warns ``[warn] Epoll ADD(4) on fd N failed ... Bad file descriptor``
when a dead peer's socket was closed under it. A main job on 8 ranks printed some 300 such
lines. (``EVENT_NOEPOLL=1`` would avoid the second, but without ``--with-ft ulfm`` it left
Open MPI's event loop with no back-end and MPI_Init failed, so it is not used.)

Each rank's standard error therefore runs through a small filter process started before
MPI is (so nothing is forked inside MPI): it drops exactly those lines and passes everything
else through unchanged, line by line, as it comes. The filter outlives a killed rank long
enough to pass on what the rank wrote before it died (it reads until the pipe closes).
``MPIBENCH_MPI_NOISE=show`` turns it off. ``python -m mpibench`` installs it before anything
imports mpi4py. Lines the launcher itself prints do not pass through it.
"""
from __future__ import annotations

import os
import subprocess
import sys

# The filter program (run with -I -S: no site packages, quick to start); testable as FILTER.
FILTER = r"""
import re, sys
harmless = re.compile(rb"^NBC_Progress: an error (75|77) was found during schedule 0x[0-9a-fA-F]+ "
                      rb"at row-offset -?[0-9]+ - aborting the schedule\r?\n$")
start_round = re.compile(rb"^Error in NBC_Start_round\(\) \(-1\)\r?\n$")
epoll = re.compile(rb"^\[warn\] Epoll ADD\([0-9]+\) on fd [0-9]+ failed\. Old events were [0-9]+; "
                   rb"read change was [0-9]+ \([a-z]+\); write change was [0-9]+ \([a-z]+\); "
                   rb"close change was [0-9]+ \([a-z]+\): Bad file descriptor\r?\n$")
out = sys.stdout.buffer
after_harmless = False
for line in iter(sys.stdin.buffer.readline, b""):
    if harmless.match(line):
        after_harmless = True
        continue
    if epoll.match(line) or start_round.match(line):
        continue
    if after_harmless and line.strip() == b"":  # the blank line libnbc prints after it
        after_harmless = False
        continue
    after_harmless = False
    out.write(line)
    out.flush()
"""


def under_open_mpi() -> bool:
    return "OMPI_COMM_WORLD_SIZE" in os.environ


def install() -> None:
    """Route this process's standard error through the filter (ranks under Open MPI only)."""
    if os.environ.get("MPIBENCH_MPI_NOISE") == "show" or not under_open_mpi():
        return
    try:
        read_end, write_end = os.pipe()
        subprocess.Popen([sys.executable, "-I", "-S", "-c", FILTER], stdin=read_end, stdout=2,
                         stderr=subprocess.DEVNULL, close_fds=True)
    except OSError:
        return  # no filter: the lines stay, nothing is lost
    os.close(read_end)
    sys.stderr.flush()
    os.dup2(write_end, 2)
    os.close(write_end)
