"""mpi4py's own tests, run on the simulated library (see test_sim_mpi4py_suite).

``python mpi4py_suite.py TESTDIR RANKS MODULE.Class.test ...``: the simulated library becomes
``mpi4py.MPI`` (the process model's install: the one adaptation), mpi4py's ``test`` folder goes
on the import path unchanged, and every simulated process runs the named tests with unittest,
as ``mpiexec -n RANKS python test/main.py`` runs them in every real process. Prints one
RESULT line: per rank, the tests that ran, failed (with the traceback's last line) or errored.
"""
import json
import sys
import unittest

from mpibench.sim.process import install, run_world

install()
test_dir, ranks, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
sys.path.insert(0, test_dir)
found = {}
LOCAL_HELPERS = ("arrayimpl", "dlpackimpl", "mpiunittest", "mpitestutil")


def body():
    from mpi4py import MPI

    # Simulated processes share one interpreter, so each imports the test modules and their
    # helpers afresh: arrayimpl keeps its loop's array type and type code in module state, which
    # separate real processes never share (the second adaptation, the process model's too).
    for name in [n for n in sys.modules if n.startswith("test_") or n in LOCAL_HELPERS]:
        del sys.modules[name]
    try:
        suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    except Exception as exc:  # noqa: BLE001 - a module that does not import: reported, not a crash
        found[MPI.COMM_WORLD.Get_rank()] = {"import_error": f"{type(exc).__name__}: {exc}"}
        return 1
    result = unittest.TestResult()
    suite.run(result)
    last = lambda tb: tb.strip().splitlines()[-1]  # noqa: E731
    found[MPI.COMM_WORLD.Get_rank()] = {
        "ran": result.testsRun, "failures": {t.id(): last(tb) for t, tb in result.failures},
        "errors": {t.id(): last(tb) for t, tb in result.errors}, "skipped": {t.id(): r for t, r in result.skipped}}
    return 0


world = run_world(ranks, body)
print("RESULT " + json.dumps({"ranks": found, "codes": world.codes, "deadlocked": world.deadlocked}))
