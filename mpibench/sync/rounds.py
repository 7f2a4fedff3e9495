"""Rounds of point-to-point transfers over buffer views, and the loop that runs them.

The logarithmic strategies (``rd``, ``rabenseifner``, ``hier``) compile their
plan for one buffer into a list of :class:`Round` once (cached across
steps), so a reduction is a loop over prepared views: post every receive and
send of the round through the communicator (the same wrapped ``irecv`` /
``isend`` the ring uses, so deadlines, partitions and mid-reduction kills
apply to each message), wait, then add the received scratch into its target.

A transfer's views are slices of the buffer or of a scratch array; empty
views are dropped when the round is built (both sides know the widths), so a
zero-length piece never becomes a message.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Round:
    """This rank's part of one round: what it sends and receives, and what it adds after."""

    peers: tuple[int, ...]  # communicator ranks waited on (named in a deadline error)
    sends: list = field(default_factory=list)  # (view, dest)
    recvs: list = field(default_factory=list)  # (view, source)
    adds: list = field(default_factory=list)  # (target view, received view)
    swap: tuple | None = None  # (send view, dest, receive view, source), set by seal()

    def send(self, view, dest: int) -> None:
        if len(view):
            self.sends.append((view, dest))

    def recv(self, view, source: int, into=None) -> None:
        """Receive ``view`` from ``source``; with ``into``, add it there once it has arrived."""
        if len(view):
            self.recvs.append((view, source))
            if into is not None:
                self.adds.append((into, view))

    def seal(self) -> "Round":
        """Done adding transfers: note whether the round is one send and one receive."""
        if len(self.sends) == 1 and len(self.recvs) == 1:
            self.swap = (self.sends[0][0], self.sends[0][1], self.recvs[0][0], self.recvs[0][1])
        return self

    @property
    def empty(self) -> bool:
        return not (self.sends or self.recvs)


def run_rounds(comm, backend, rounds: list[Round], tag: int) -> None:
    """Run ``rounds`` (from :func:`compact`) in order: post, wait (deadline-bounded), accumulate."""
    irecv, isend, accumulate = comm.irecv, comm.isend, backend.accumulate
    for rnd in rounds:
        backend.synchronize()  # device buffers must be final before MPI reads them
        if rnd.swap is not None:  # one message each way: the communicator's sendrecv, one call
            comm.sendrecv(*rnd.swap, tag)
        else:
            requests = [irecv(view, source, tag) for view, source in rnd.recvs]
            requests += [isend(view, dest, tag) for view, dest in rnd.sends]
            comm.wait(requests, rnd.peers)
        for target, received in rnd.adds:
            accumulate(target, received)


def compact(rounds: list[Round]) -> list[Round]:
    """The rounds in which this rank has anything to do, sealed."""
    return [r.seal() for r in rounds if not r.empty]
