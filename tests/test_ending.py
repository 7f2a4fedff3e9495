"""A process that knows its status leaves within bounded time: with that status when Python can
still run (the timer), with status 1, never 0, when the interpreter itself is stuck."""
import subprocess
import sys
import time

import pytest

HANG = {
    # Waiting in a call that lets other threads run (as MPI calls do: mpi4py releases the GIL).
    "releases the interpreter": "import time; time.sleep(120)",
    # Stuck holding the interpreter (no Python thread can run): only faulthandler's own thread can act.
    "holds the interpreter": "import ctypes; ctypes.PyDLL(None).sleep(120)",
}


@pytest.mark.parametrize("code", [0, 1, 3, 4])
@pytest.mark.parametrize("how", list(HANG))
def test_a_process_stuck_after_its_verdict_leaves_in_bounded_time(how, code):
    program = (f"from mpibench.cli.ending import bound_exit; bound_exit({code}, grace_s=1.0, last_resort_s=1.0); "
               + HANG[how])
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 30
    if how == "releases the interpreter":
        assert done.returncode == code, done.stderr
        assert "did not finish leaving within 1 s" in done.stderr
    else:
        assert done.returncode == 1, done.stderr  # never a pass claimed by a process nobody could check
