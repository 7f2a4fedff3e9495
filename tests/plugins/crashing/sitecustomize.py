"""Test plants, on PYTHONPATH only for the tests that ask for them; patched at interpreter
start, so the main job, ``run`` and the simulated engine meet them alike without any hook
in mpibench itself.

- ``MPIBENCH_TEST_CRASH=RANK:CALL``: worker RANK's ring all-reduce raises
  ``ZeroDivisionError`` in its CALL-th reduction (counted from 1); every other rank goes
  on into that reduction and waits for it there, as it would for a real defect.
- ``MPIBENCH_TEST_STALL=RANK:CALL``: worker RANK's ring all-reduce sleeps 600 s in its
  CALL-th reduction (a rank hung without dying); its peers find no answer within the deadline.
- ``MPIBENCH_TEST_HANG_AFTER_LOOP=RANK``: worker RANK hangs (600 s) once its last step is
  done, as it closes its history, before the case's verdict.
- ``MPIBENCH_TEST_IGNORE_ENDING=RANK``: that rank ignores the ending once its job body
  has returned (below).
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

_STALLS = os.environ.get("MPIBENCH_TEST_STALL", "")

if _STALLS:
    import time

    from mpibench.sync import ring

    _stall_rank, _stall_call = (int(part) for part in _STALLS.split(":"))
    _unstalled = ring.RingAllreduce.reduce

    def _stalling_reduce(self, buf):
        self._stall_calls = getattr(self, "_stall_calls", 0) + 1
        if self.comm.rank == _stall_rank and self._stall_calls == _stall_call:
            time.sleep(600)
        return _unstalled(self, buf)

    ring.RingAllreduce.reduce = _stalling_reduce

_HANGS_AFTER = os.environ.get("MPIBENCH_TEST_HANG_AFTER_LOOP", "")

if _HANGS_AFTER:
    import time

    from mpibench.engine.worker import Trainer

    _close_history = Trainer.close_history

    def _hanging_close(self):
        if self.comm.worker_id == int(_HANGS_AFTER):
            time.sleep(600)
        return _close_history(self)

    Trainer.close_history = _hanging_close

_IGNORES = os.environ.get("MPIBENCH_TEST_IGNORE_ENDING", "")

if _IGNORES:
    # Rank RANK (the launcher's numbering) never leaves by itself once its job body has
    # returned: it neither arms its own exit bound nor enters the exit agreement, as a
    # rank stuck in a call that never returns would.
    import time

    from mpibench.cli import ending

    _bound_exit = ending.bound_exit

    def _ignore_the_ending(code, *args, **kwargs):
        if os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK")) == _IGNORES:
            time.sleep(600)
        return _bound_exit(code, *args, **kwargs)

    ending.bound_exit = _ignore_the_ending
