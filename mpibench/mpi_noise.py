"""Known-harmless Open MPI lines kept off a rank's standard error, nothing else.

(``EVENT_NOEPOLL=1``, set here for the rank's own libevent and by the Makefile for the
launcher's, keeps libevent's "Epoll ADD ... Bad file descriptor" warnings from arising.)

When a peer dies or a communicator is revoked, Open MPI's non-blocking collectives
(libnbc, behind the deadline communicator's Iallreduce, Iallgather and Ibcast) print
``NBC_Progress: an error 75|77 was found during schedule 0x... - aborting the schedule``
and a blank line, unconditionally, although the call then returns the error to mpibench,
which recovers from it (75: a process failed, 77: the communicator was revoked). A main
job on 8 ranks printed some 300 of them. Each rank's standard error therefore runs through a
small filter process started before MPI is (so no fork happens inside MPI): it drops exactly
those lines and passes everything else through unchanged, line by line, as it comes. The
filter outlives a killed rank long enough to pass on what the rank wrote before it died (it
reads until the pipe closes). ``MPIBENCH_MPI_NOISE=show`` turns it off. It is installed
by ``python -m mpibench`` before anything imports mpi4py.
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
out = sys.stdout.buffer
after_harmless = False
for line in iter(sys.stdin.buffer.readline, b""):
    if harmless.match(line):
        after_harmless = True
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
    # libevent's epoll back-end warns "Epoll ADD(4) on fd N failed ... Bad file descriptor" when a
    # dead peer's socket is closed under it; its poll back-end watches the same descriptors quietly.
    os.environ.setdefault("EVENT_NOEPOLL", "1")
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
