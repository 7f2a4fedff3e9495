"""Test plant, on PYTHONPATH only for the tests that ask for it: a crash on one rank.

With ``MPIBENCH_TEST_CRASH=RANK:CALL`` set, worker RANK's ring all-reduce raises
``ZeroDivisionError`` in its CALL-th reduction (counted from 1); every other rank
goes on into that reduction and waits for it there, as it would for a real defect.
Patched at interpreter start, so the main job, ``run`` and the simulated engine
meet it alike without any hook in mpibench itself.
"""
import os

_WANTED = os.environ.get("MPIBENCH_TEST_CRASH", "")

if _WANTED:
    from mpibench.sync import ring

    _rank, _call = (int(part) for part in _WANTED.split(":"))
    _original = ring.RingAllreduce.reduce

    def _reduce(self, buf):
        self._planted_calls = getattr(self, "_planted_calls", 0) + 1
        if self.comm.rank == _rank and self._planted_calls == _call:
            raise ZeroDivisionError("planted: this strategy divided by zero")
        return _original(self, buf)

    ring.RingAllreduce.reduce = _reduce
